// Package agent is the testbed transport to another host: the controller
// (the tunbench that runs the plan) starts "tunbench agent" there (over
// SSH, or in a pod) and speaks to it through a byte stream, the
// session's standard input and output. ServeAgent is the agent's side:
// it runs commands, ops and netlink calls on a local endpoint of its
// host, and when the controller goes it kills what it started and puts
// back what the site's journal holds. AgentConn is the controller's
// side: its Endpoint is a testbed.Endpoint whose every effect goes to
// the agent. CleanSite removes what a site of a run left on this host
// after its agent was cut off.
package agent
