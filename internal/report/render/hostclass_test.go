package render

import (
	"bytes"
	"encoding/csv"
	"slices"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/report/export"
	"github.com/tunbench/tunbench/internal/report/internal/fixture"
	"github.com/tunbench/tunbench/internal/report/summary"
	"github.com/tunbench/tunbench/internal/result"
)

// classRun is the local fixture measured on a host of the given class.
func classRun(class, hv string) (result.Run, []result.Cell) {
	run, cells := fixture.LocalRun()
	run.Host.Class, run.Host.Hypervisor, run.Host.OSRelease = class, hv, "Debian GNU/Linux 12 (bookworm)"
	run.Host.Emulated = class == result.ClassEmulated
	return run, cells
}

func tableOf(t *testing.T, run result.Run, cells []result.Cell) string {
	t.Helper()
	var b bytes.Buffer
	if err := summary.Table(&b, run, cells, summary.TableOptions{}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestHostClassVM(t *testing.T) {
	run, cells := classRun(result.ClassVM, "KVM")
	tbl := tableOf(t, run, cells)
	for _, want := range []string{
		"host bench1, vm (KVM), Debian GNU/Linux 12 (bookworm), kernel 6.8.0-45-generic,",
		"measured on a virtual machine (KVM): the figures include the hypervisor's costs",
	} {
		if !strings.Contains(tbl, want) {
			t.Errorf("table lacks %q:\n%s", want, tbl)
		}
	}
	if strings.Contains(tbl, "EMULATED") || strings.Contains(tbl, summary.EmulatedNote) {
		t.Errorf("a vm is marked emulated:\n%s", tbl)
	}
	d := export.NewDocument(run, cells)
	if d.Emulated || !slices.Equal(d.Summary[0].VMs, []string{"KVM"}) {
		t.Errorf("export: emulated %v, vm hosts %q", d.Emulated, d.Summary[0].VMs)
	}
	env := environment([]result.Run{run})
	if got := envValue(env, "host class"); got != "vm (KVM)" {
		t.Errorf("environment host class %q", got)
	}
	if got := envValue(env, "OS"); got != "Debian GNU/Linux 12 (bookworm)" {
		t.Errorf("environment OS %q", got)
	}
}

func TestHostClassBareMetal(t *testing.T) {
	run, cells := classRun(result.ClassBareMetal, "")
	tbl := tableOf(t, run, cells)
	if !strings.Contains(tbl, "host bench1, bare-metal, Debian") {
		t.Errorf("header lacks the class:\n%s", tbl)
	}
	if strings.Contains(tbl, "virtual machine") || strings.Contains(tbl, "EMULATED") {
		t.Errorf("bare metal labelled vm or emulated:\n%s", tbl)
	}
}

// A host found emulated by its own detection is marked so on the local
// testbed, with no testbed saying so: Host.Emulated aside, Class alone.
func TestHostClassEmulatedWithoutTestbed(t *testing.T) {
	run, cells := classRun(result.ClassEmulated, "QEMU TCG")
	run.Host.Emulated = false // a reader must not need the flag
	tbl := tableOf(t, run, cells)
	for _, want := range []string{"emulated (QEMU TCG)", "EMULATED: figures measure function, not performance.", summary.EmulatedNote} {
		if !strings.Contains(tbl, want) {
			t.Errorf("table lacks %q:\n%s", want, tbl)
		}
	}
	d := export.NewDocument(run, cells)
	if !d.Emulated || !d.Summary[0].Emulated || d.Warnings[0] != summary.EmulatedNote+"." {
		t.Errorf("export: emulated %v, row emulated %v, warnings %q", d.Emulated, d.Summary[0].Emulated, d.Warnings)
	}
	var wide bytes.Buffer
	if err := export.WideCSV(&wide, run, cells); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&wide).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := slices.Index(export.WideCSVHeader, "emulated")
	for _, r := range recs[1:] {
		if r[col] != "true" {
			t.Errorf("wide CSV row %q is not marked emulated", r)
		}
	}
	b, err := Build([]RunRecords{{Run: run, Cells: cells}}, "files")
	if err != nil {
		t.Fatal(err)
	}
	var html bytes.Buffer
	if err := b.WriteHTML(&html); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<strong>Emulated:</strong> figures measure function, not performance.", "emulated (QEMU TCG)"} {
		if !strings.Contains(html.String(), want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
}

// On the ssh testbed each host has its own class: the note names the
// sites that are virtual machines, and an emulated site marks the row.
func TestHostClassPerSSHHost(t *testing.T) {
	run, cells := fixture.LocalRun()
	run.Testbed = "ssh"
	run.Host.Class, run.Host.Hypervisor = result.ClassVM, "Xen" // the controller measured nothing
	for i := range cells {
		cells[i].Meta.Hosts = []result.Host{
			{Site: "fra", Side: "a", Class: result.ClassVM, Hypervisor: "KVM"},
			{Site: "nyc", Side: "b", Class: result.ClassBareMetal},
		}
	}
	if n := summary.VMNote(summary.Aggregate(run, cells)); !strings.HasPrefix(n, "measured on a virtual machine (fra: KVM):") {
		t.Errorf("note %q; want the vm site alone, not the controller", n)
	}
	if tbl := tableOf(t, run, cells); !strings.Contains(tbl, "measured on a virtual machine (fra: KVM)") {
		t.Errorf("table lacks the note:\n%s", tbl)
	}
	cells[0].Meta.Hosts[1].Class = result.ClassEmulated
	rows := summary.Aggregate(run, cells)
	if !rows[0].Emulated || rows[1].Emulated {
		t.Errorf("row emulated: %v, %v; want only the row with the emulated site", rows[0].Emulated, rows[1].Emulated)
	}
}

func envValue(e Environment, name string) string {
	for _, r := range e.Rows {
		if r.Name == name {
			return r.Values[0]
		}
	}
	return ""
}
