// Package k8scheck checks docs/deploy/kubernetes offline, with no cluster:
// each document against its Kubernetes API type (k8s.io/api, unknown or
// mistyped fields refused), then what ties the files together (selectors,
// named ports, the NATS names and ports in the flags, the probe on
// /healthz, a grace period that covers the drain window, the Dockerfile's
// user). A module of its own so wsready's go.mod does not carry k8s.io/api.
package k8scheck

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

const dir = "../../../docs/deploy/kubernetes"

type manifests struct {
	deployments  []*appsv1.Deployment
	statefulSets []*appsv1.StatefulSet
	services     []*corev1.Service
	pdbs         []*policyv1.PodDisruptionBudget
}

// load decodes every document of every .yaml file in dir strictly into
// the type its apiVersion and kind name.
func load(t *testing.T, dir string) *manifests {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s: %v", dir, err)
	}
	m := &manifests{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			if err := m.add([]byte(doc)); err != nil {
				t.Errorf("%s, document %d: %v", filepath.Base(f), i+1, err)
			}
		}
	}
	return m
}

func stripComments(doc string) string {
	var out []string
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func (m *manifests) add(doc []byte) error {
	var head struct{ APIVersion, Kind string }
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return fmt.Errorf("failed to read apiVersion and kind: %w", err)
	}
	var obj any
	switch head.APIVersion + " " + head.Kind {
	case "apps/v1 Deployment":
		d := &appsv1.Deployment{}
		m.deployments, obj = append(m.deployments, d), d
	case "apps/v1 StatefulSet":
		s := &appsv1.StatefulSet{}
		m.statefulSets, obj = append(m.statefulSets, s), s
	case "v1 Service":
		s := &corev1.Service{}
		m.services, obj = append(m.services, s), s
	case "policy/v1 PodDisruptionBudget":
		p := &policyv1.PodDisruptionBudget{}
		m.pdbs, obj = append(m.pdbs, p), p
	default:
		return fmt.Errorf("kind %q of %q is not one this check knows", head.Kind, head.APIVersion)
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return fmt.Errorf("failed to decode as %s %s: %w", head.APIVersion, head.Kind, err)
	}
	return nil
}

// flags maps each -name=value of args after the subcommand.
func flags(t *testing.T, args []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, a := range args[1:] {
		name, value, ok := strings.Cut(strings.TrimPrefix(a, "-"), "=")
		if !ok || !strings.HasPrefix(a, "-") {
			t.Errorf("argument %q: write flags as -name=value, one a line", a)
			continue
		}
		out[name] = value
	}
	return out
}

func TestManifests(t *testing.T) {
	m := load(t, dir)
	if len(m.deployments) != 1 || len(m.statefulSets) != 1 {
		t.Fatalf("%d Deployments and %d StatefulSets, want the wsready Deployment and the NATS StatefulSet", len(m.deployments), len(m.statefulSets))
	}
	dep, sts := m.deployments[0], m.statefulSets[0]
	user := dockerfileUser(t)

	for _, pod := range []struct {
		name string
		spec corev1.PodTemplateSpec
	}{{dep.Name, dep.Spec.Template}, {sts.Name, sts.Spec.Template}} {
		sc := pod.spec.Spec.SecurityContext
		if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != user {
			t.Errorf("%s: want runAsNonRoot and runAsUser %d (the Dockerfile's USER)", pod.name, user)
		}
		if len(pod.spec.Spec.Containers) != 1 {
			t.Fatalf("%s: %d containers, want 1", pod.name, len(pod.spec.Spec.Containers))
		}
	}
	for _, sel := range []struct {
		what   string
		sel    map[string]string
		labels map[string]string
	}{
		{"Deployment " + dep.Name, dep.Spec.Selector.MatchLabels, dep.Spec.Template.Labels},
		{"StatefulSet " + sts.Name, sts.Spec.Selector.MatchLabels, sts.Spec.Template.Labels},
	} {
		if len(sel.sel) == 0 || !matches(sel.sel, sel.labels) {
			t.Errorf("%s: selector %v does not select its pods %v", sel.what, sel.sel, sel.labels)
		}
	}

	// Each Service selects one workload's pods and names its ports.
	for _, svc := range m.services {
		var pod *corev1.PodTemplateSpec
		for _, p := range []*corev1.PodTemplateSpec{&dep.Spec.Template, &sts.Spec.Template} {
			if len(svc.Spec.Selector) > 0 && matches(svc.Spec.Selector, p.Labels) {
				pod = p
			}
		}
		if pod == nil {
			t.Errorf("Service %s selects no pods of these manifests (%v)", svc.Name, svc.Spec.Selector)
			continue
		}
		for _, p := range svc.Spec.Ports {
			target := p.TargetPort
			if target.String() == "0" {
				target.IntVal, target.StrVal = p.Port, ""
			}
			if port(pod.Spec.Containers[0], target.String()) == 0 {
				t.Errorf("Service %s: port %s targets %s, which the pods do not expose", svc.Name, p.Name, target.String())
			}
		}
	}
	for _, p := range m.pdbs {
		if p.Spec.Selector == nil || !matches(p.Spec.Selector.MatchLabels, sts.Spec.Template.Labels) {
			t.Errorf("PodDisruptionBudget %s does not select the NATS pods", p.Name)
		}
	}

	// NATS: one wsready nats per pod, routes to every pod by its DNS name.
	nc := sts.Spec.Template.Spec.Containers[0]
	if nc.Args[0] != "nats" {
		t.Fatalf("the StatefulSet runs %q, want wsready nats", nc.Args[0])
	}
	nf := flags(t, nc.Args)
	headless := false
	for _, svc := range m.services {
		headless = headless || (svc.Name == sts.Spec.ServiceName && svc.Spec.ClusterIP == corev1.ClusterIPNone)
	}
	if !headless {
		t.Errorf("StatefulSet %s: its serviceName %q is not a headless Service of these manifests", sts.Name, sts.Spec.ServiceName)
	}
	replicas := int(*sts.Spec.Replicas)
	clusterPort := portOf(t, nf["cluster-addr"])
	if port(nc, strconv.Itoa(clusterPort)) == 0 {
		t.Errorf("NATS -cluster-addr port %d is not a containerPort", clusterPort)
	}
	wantHosts(t, "-routes", strings.Split(nf["routes"], ","), sts, replicas, clusterPort, "")
	if nf["data"] == "" || !mounted(nc, nf["data"]) {
		t.Errorf("NATS -data %q is not a mounted volume (the root file system is read-only, and the data must outlive the pod)", nf["data"])
	}

	// wsready serve: the NATS URLs, readiness on /healthz, the drain.
	wc := dep.Spec.Template.Spec.Containers[0]
	if wc.Args[0] != "serve" {
		t.Fatalf("the Deployment runs %q, want wsready serve", wc.Args[0])
	}
	wf := flags(t, wc.Args)
	clientPort := portOf(t, nf["addr"])
	wantHosts(t, "-nats", strings.Split(wf["nats"], ","), sts, replicas, clientPort, "nats://")
	if r, _ := strconv.Atoi(wf["nats-replicas"]); r < 1 || r > replicas {
		t.Errorf("-nats-replicas %q: want 1 to the %d NATS servers", wf["nats-replicas"], replicas)
	}
	servePort := portOf(t, wf["addr"])
	rp := wc.ReadinessProbe
	if rp == nil || rp.HTTPGet == nil || rp.HTTPGet.Path != "/healthz" || port(wc, rp.HTTPGet.Port.String()) != servePort {
		t.Errorf("the wsready readiness probe is not GET /healthz on the -addr port %d", servePort)
	}
	if wc.LivenessProbe == nil {
		t.Error("the wsready container has no liveness probe")
	}
	window := 10 * time.Second // -drain-window's default
	if v, ok := wf["drain-window"]; ok {
		var err error
		if window, err = time.ParseDuration(v); err != nil {
			t.Fatalf("-drain-window %q: %v", v, err)
		}
	}
	grace := time.Duration(*dep.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second
	if grace <= window {
		t.Errorf("terminationGracePeriodSeconds %v does not cover -drain-window %v: connections would be cut, not drained", grace, window)
	}
}

func matches(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// port is the number of the container's port named or numbered p, or 0.
func port(c corev1.Container, p string) int {
	for _, cp := range c.Ports {
		if cp.Name == p || strconv.Itoa(int(cp.ContainerPort)) == p {
			return int(cp.ContainerPort)
		}
	}
	return 0
}

func portOf(t *testing.T, hostport string) int {
	t.Helper()
	i := strings.LastIndex(hostport, ":")
	p, err := strconv.Atoi(hostport[i+1:])
	if i < 0 || err != nil {
		t.Fatalf("address %q has no port", hostport)
	}
	return p
}

func mounted(c corev1.Container, path string) bool {
	for _, v := range c.VolumeMounts {
		if v.MountPath == path {
			return true
		}
	}
	return false
}

// wantHosts checks that addrs are exactly the StatefulSet's pods by their
// DNS names (name-0.service and so on) on port.
func wantHosts(t *testing.T, flag string, addrs []string, sts *appsv1.StatefulSet, replicas, port int, scheme string) {
	t.Helper()
	var want []string
	for i := range replicas {
		want = append(want, fmt.Sprintf("%s%s-%d.%s:%d", scheme, sts.Name, i, sts.Spec.ServiceName, port))
	}
	if strings.Join(addrs, ",") != strings.Join(want, ",") {
		t.Errorf("%s is %v, want the NATS pods %v", flag, addrs, want)
	}
}

// dockerfileUser is the numeric user of docs/deploy/Dockerfile's USER.
func dockerfileUser(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("../../../docs/deploy/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^USER (\d+):\d+$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("docs/deploy/Dockerfile has no numeric USER uid:gid")
	}
	u, _ := strconv.ParseInt(string(bytes.TrimSpace(m[1])), 10, 64)
	return u
}
