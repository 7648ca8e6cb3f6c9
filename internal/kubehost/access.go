package kubehost

import (
	"context"
	"fmt"
	"strings"

	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// permission is one thing a run does through the API server.
type permission struct {
	verb, resource, subresource string
	namespaced                  bool
}

func (p permission) resourceName() string {
	if p.subresource != "" {
		return p.resource + "/" + p.subresource
	}
	return p.resource
}

// permissions are what a run needs: node descriptions (cluster scope);
// creating, watching and deleting its pods and exec into them in the
// namespace. Exec over WebSocket is a GET of pods/exec, over SPDY a POST
// (create); the API server asks for get or create by the transport, so
// both are needed. A Host reads an empty slice of its pod's log to learn
// that the node's kubelet still answers (get pods/log).
var permissions = []permission{
	{verb: "get", resource: "nodes"},
	{verb: "create", resource: "pods", namespaced: true},
	{verb: "get", resource: "pods", namespaced: true},
	{verb: "list", resource: "pods", namespaced: true},
	{verb: "watch", resource: "pods", namespaced: true},
	{verb: "delete", resource: "pods", namespaced: true},
	{verb: "create", resource: "pods", subresource: "exec", namespaced: true},
	{verb: "get", resource: "pods", subresource: "exec", namespaced: true},
	{verb: "get", resource: "pods", subresource: "log", namespaced: true},
}

// CheckAccess asks the API server (SelfSubjectAccessReview) whether the
// kubeconfig's user may do everything a run needs, before anything is
// created. The error lists every missing "verb resource (namespace)" and
// the Role and ClusterRole rules that grant them.
func (c *Cluster) CheckAccess(ctx context.Context) error {
	var missing []permission
	for _, p := range permissions {
		ra := &authzv1.ResourceAttributes{Verb: p.verb, Resource: p.resource, Subresource: p.subresource}
		if p.namespaced {
			ra.Namespace = c.namespace
		}
		r, err := c.cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authzv1.SelfSubjectAccessReview{
			Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: ra},
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("kubehost: check access (%s) to %s %s: %w", c.source, p.verb, p.resourceName(), err)
		}
		if !r.Status.Allowed {
			missing = append(missing, p)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("kubehost: the user of %s lacks permissions a run needs: %s\n%s",
		c.source, missingList(missing, c.namespace), grantRules(missing, c.namespace))
}

func missingList(missing []permission, ns string) string {
	var s []string
	for _, p := range missing {
		where := "cluster scope"
		if p.namespaced {
			where = "namespace " + ns
		}
		s = append(s, fmt.Sprintf("%s %s (%s)", p.verb, p.resourceName(), where))
	}
	return strings.Join(s, ", ")
}

// grantRules words the RBAC rules that grant missing, as YAML.
func grantRules(missing []permission, ns string) string {
	var cluster, namespaced []permission
	for _, p := range missing {
		if p.namespaced {
			namespaced = append(namespaced, p)
		} else {
			cluster = append(cluster, p)
		}
	}
	var b strings.Builder
	b.WriteString("Grant them with rules like these (bind them to the user with a RoleBinding and a ClusterRoleBinding):\n")
	if len(namespaced) > 0 {
		fmt.Fprintf(&b, "kind: Role  # in namespace %s\nrules:\n%s", ns, rules(namespaced))
	}
	if len(cluster) > 0 {
		fmt.Fprintf(&b, "kind: ClusterRole\nrules:\n%s", rules(cluster))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// rules groups ps by resource, in order of first appearance.
func rules(ps []permission) string {
	var order []string
	verbs := map[string][]string{}
	for _, p := range ps {
		r := p.resourceName()
		if _, ok := verbs[r]; !ok {
			order = append(order, r)
		}
		verbs[r] = append(verbs[r], p.verb)
	}
	var b strings.Builder
	for _, r := range order {
		fmt.Fprintf(&b, "- apiGroups: [\"\"]\n  resources: [\"%s\"]\n  verbs: [\"%s\"]\n", r, strings.Join(verbs[r], `", "`))
	}
	return b.String()
}
