package kubernetes

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/deploy/deploytest"
	"github.com/probegate/probegate/mixin/lint"
)

// shutdownMargin is what terminationGracePeriodSeconds must leave beyond
// gate.drain + gate.shutdown_timeout: the process's own exit and the
// kubelet's slack.
const shutdownMargin = 10 * time.Second

// base is the rendered kustomize base, every object decoded.
type base struct {
	configMap      *corev1.ConfigMap
	service        *corev1.Service
	deployment     *appsv1.Deployment
	pdb            *policyv1.PodDisruptionBudget
	networkPolicy  *networkingv1.NetworkPolicy
	serviceMonitor *monitoringv1.ServiceMonitor
	prometheusRule *monitoringv1.PrometheusRule
}

// decodeStrict decodes one YAML document into out, rejecting unknown and
// duplicate fields: a misspelt or misplaced key is an error here, not a
// field the API server silently drops.
func decodeStrict(doc []byte, out any) error {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	return dec.Decode(out)
}

// render runs kubectl kustomize on this folder and decodes what it prints.
func render(t *testing.T) *base {
	t.Helper()
	return renderDir(t, ".")
}

// renderDir runs kubectl kustomize on a kustomization folder, this base
// or an overlay of it, and decodes what it prints.
func renderDir(t *testing.T, dir string) *base {
	t.Helper()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatal("kubectl is missing: install the Debian package kubernetes-client (make deps does)")
	}
	var stderr bytes.Buffer
	cmd := exec.Command(kubectl, "kustomize", dir)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl kustomize: %v\n%s", err, stderr.String())
	}
	b := &base{}
	seen := map[string]int{}
	for _, doc := range bytes.Split(out, []byte("\n---\n")) {
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			t.Fatalf("rendered object: %v\n%s", err, doc)
		}
		id := tm.APIVersion + " " + tm.Kind
		seen[id]++
		var obj any
		switch id {
		case "v1 ConfigMap":
			b.configMap = &corev1.ConfigMap{}
			obj = b.configMap
		case "v1 Service":
			b.service = &corev1.Service{}
			obj = b.service
		case "apps/v1 Deployment":
			b.deployment = &appsv1.Deployment{}
			obj = b.deployment
		case "policy/v1 PodDisruptionBudget":
			b.pdb = &policyv1.PodDisruptionBudget{}
			obj = b.pdb
		case "networking.k8s.io/v1 NetworkPolicy":
			b.networkPolicy = &networkingv1.NetworkPolicy{}
			obj = b.networkPolicy
		case "monitoring.coreos.com/v1 ServiceMonitor":
			b.serviceMonitor = &monitoringv1.ServiceMonitor{}
			obj = b.serviceMonitor
		case "monitoring.coreos.com/v1 PrometheusRule":
			b.prometheusRule = &monitoringv1.PrometheusRule{}
			obj = b.prometheusRule
		default:
			t.Fatalf("the base renders an unexpected %s", id)
		}
		if err := decodeStrict(doc, obj); err != nil {
			t.Fatalf("%s does not decode strictly into its API type: %v", id, err)
		}
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("the base renders %d objects of %s, want 1", n, id)
		}
	}
	if b.configMap == nil || b.service == nil || b.deployment == nil || b.pdb == nil || b.networkPolicy == nil ||
		b.serviceMonitor == nil || b.prometheusRule == nil {
		t.Fatalf("the base lacks objects; it renders %v", seen)
	}
	return b
}

// container is the Deployment's probegate container.
func (b *base) container(t *testing.T) *corev1.Container {
	t.Helper()
	cs := b.deployment.Spec.Template.Spec.Containers
	if len(cs) != 1 || cs[0].Name != "probegate" {
		t.Fatalf("the Deployment's containers are %d, want one named probegate", len(cs))
	}
	return &cs[0]
}

// podLabels are the labels of the Deployment's pods.
func (b *base) podLabels() labels.Set {
	return labels.Set(b.deployment.Spec.Template.Labels)
}

// selects reports whether sel selects the Deployment's pods.
func (b *base) selects(t *testing.T, what string, sel *metav1.LabelSelector) {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Errorf("%s: %v", what, err)
		return
	}
	if s.Empty() || !s.Matches(b.podLabels()) {
		t.Errorf("%s selector %q does not select the Deployment's pods %v", what, s, b.podLabels())
	}
}

// shippedConfig loads the probegate.yml of the rendered ConfigMap with the
// repository's own config package, as probegate would.
func (b *base) shippedConfig(t *testing.T) (*config.Config, string) {
	t.Helper()
	data, ok := b.configMap.Data["probegate.yml"]
	if !ok {
		t.Fatalf("ConfigMap %s has no probegate.yml", b.configMap.Name)
	}
	file := filepath.Join(t.TempDir(), "probegate.yml")
	if err := os.WriteFile(file, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(file)
	if err != nil {
		t.Fatalf("the shipped probegate.yml is invalid: %v", err)
	}
	return cfg, file
}

// flagValue is the value of --name=value in args.
func flagValue(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// containerPort resolves a probe's port, by name or number.
func containerPort(t *testing.T, c *corev1.Container, port intstr.IntOrString) corev1.ContainerPort {
	t.Helper()
	for _, p := range c.Ports {
		if (port.Type == intstr.String && p.Name == port.StrVal) || (port.Type == intstr.Int && p.ContainerPort == port.IntVal) {
			return p
		}
	}
	t.Fatalf("port %s is no port of the container", port.String())
	return corev1.ContainerPort{}
}

func TestDeploymentRunsWhatTheBinaryServes(t *testing.T) {
	b := render(t)
	c := b.container(t)

	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["http"] != 9797 || ports["health"] != 9798 {
		t.Errorf("container ports %v, want http 9797 and health 9798", ports)
	}
	// Each listener flag listens on the port of the same name.
	for flag, name := range map[string]string{"web.listen-address": "http", "web.health-listen-address": "health"} {
		v, ok := flagValue(c.Args, flag)
		if !ok {
			t.Errorf("the container does not pass --%s", flag)
			continue
		}
		if _, port, err := net.SplitHostPort(v); err != nil || port != strconv.Itoa(int(ports[name])) {
			t.Errorf("--%s=%s does not listen on the %s port %d", flag, v, name, ports[name])
		}
	}

	for _, probe := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{
		{"readinessProbe", c.ReadinessProbe, "/ready"},
		{"livenessProbe", c.LivenessProbe, "/health"},
	} {
		if probe.probe == nil || probe.probe.HTTPGet == nil {
			t.Errorf("%s is not an HTTP probe", probe.name)
			continue
		}
		g := probe.probe.HTTPGet
		if g.Path != probe.path {
			t.Errorf("%s path %s, want %s", probe.name, g.Path, probe.path)
		}
		if p := containerPort(t, c, g.Port); p.Name != "health" {
			t.Errorf("%s on port %s, want the health port", probe.name, g.Port.String())
		}
	}

	// The config the container reads is the generated ConfigMap.
	cfgPath, ok := flagValue(c.Args, "config.file")
	if !ok {
		t.Fatal("the container does not pass --config.file")
	}
	var mounted bool
	for _, m := range c.VolumeMounts {
		if m.MountPath != path.Dir(cfgPath) {
			continue
		}
		for _, v := range b.deployment.Spec.Template.Spec.Volumes {
			if v.Name == m.Name && v.ConfigMap != nil && v.ConfigMap.Name == b.configMap.Name {
				mounted = true
			}
		}
	}
	if !mounted || path.Base(cfgPath) != "probegate.yml" {
		t.Errorf("--config.file=%s is not probegate.yml of ConfigMap %s mounted at %s", cfgPath, b.configMap.Name, path.Dir(cfgPath))
	}

	flags := deploytest.Flags(t, deploytest.Build(t))
	deploytest.CheckFlags(t, "the Deployment", flags, c.Args)
}

// TestAdminListenerStaysInThePod: the admin API listens on the pod's
// loopback alone, and no container port, Service port or NetworkPolicy
// rule names its port: only kubectl exec and port-forward reach it.
func TestAdminListenerStaysInThePod(t *testing.T) {
	b := render(t)
	c := b.container(t)
	v, ok := flagValue(c.Args, "web.admin-listen-address")
	if !ok {
		t.Fatal("the container does not pass --web.admin-listen-address: say where the admin API listens")
	}
	host, port, err := net.SplitHostPort(v)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		t.Errorf("--web.admin-listen-address=%s is not a loopback address", v)
	}
	for _, p := range c.Ports {
		if strconv.Itoa(int(p.ContainerPort)) == port {
			t.Errorf("container port %s (%d) exposes the admin listener", p.Name, p.ContainerPort)
		}
	}
	for _, p := range b.service.Spec.Ports {
		if p.TargetPort.String() == port || strconv.Itoa(int(p.Port)) == port {
			t.Errorf("Service port %s targets the admin listener's port %s", p.Name, port)
		}
	}
}

// TestProbePathsAreServed starts the binary with the Deployment's
// arguments and the shipped configuration, each listener on a free
// loopback port, and asks each probe's path on its port.
func TestProbePathsAreServed(t *testing.T) {
	b := render(t)
	c := b.container(t)
	_, cfgFile := b.shippedConfig(t)
	bin := deploytest.Build(t)
	flags := deploytest.Flags(t, bin)

	addrs := map[string]string{} // port name -> loopback address
	var args []string
	for _, a := range c.Args {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		switch name {
		case "config.file":
			args = append(args, "--config.file="+cfgFile)
		case "web.admin-listen-address":
			// Not the shipped port, which another probegate on this
			// host may hold.
			args = append(args, "--web.admin-listen-address="+freeAddr(t))
		case "web.listen-address", "web.health-listen-address":
			port := map[string]string{"web.listen-address": "http", "web.health-listen-address": "health"}[name]
			if !flags[name] {
				// TestDeploymentRunsWhatTheBinaryServes reports it; the
				// main listener serves the probe paths meanwhile.
				continue
			}
			addrs[port] = freeAddr(t)
			args = append(args, "--"+name+"="+addrs[port])
		default:
			args = append(args, a)
		}
	}
	if addrs["health"] == "" {
		addrs["health"] = addrs["http"]
	}
	var out bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("probegate %v:\n%s", args, out.String())
		}
	}()

	for _, probe := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
		g := probe.HTTPGet
		url := "http://" + addrs[containerPort(t, c, g.Port).Name] + g.Path
		var resp *http.Response
		var err error
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if resp, err = http.Get(url); err == nil {
				break
			}
		}
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		resp.Body.Close()
		// /ready may fail while the shipped backends do not exist; the
		// path must still be the gate's.
		if resp.StatusCode != http.StatusOK && !(g.Path == "/ready" && resp.StatusCode == http.StatusServiceUnavailable) {
			t.Errorf("GET %s: %s", url, resp.Status)
		}
		if g.Path == "/ready" && !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/health+json") {
			t.Errorf("GET %s: Content-Type %q, not the gate's application/health+json", url, resp.Header.Get("Content-Type"))
		}
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestGracePeriodCoversTheDrain: the kubelet sends SIGTERM, then kills
// after terminationGracePeriodSeconds. probegate needs gate.drain, then up
// to gate.shutdown_timeout, of the configuration it ships.
func TestGracePeriodCoversTheDrain(t *testing.T) {
	b := render(t)
	cfg, _ := b.shippedConfig(t)
	grace := b.deployment.Spec.Template.Spec.TerminationGracePeriodSeconds
	if grace == nil {
		t.Fatal("terminationGracePeriodSeconds is not set (the default, 30s, is less than any shutdown_timeout default)")
	}
	drain, shutdown := time.Duration(cfg.Gate.Drain), time.Duration(cfg.Gate.ShutdownTimeout)
	if got, need := time.Duration(*grace)*time.Second, drain+shutdown+shutdownMargin; got < need {
		t.Errorf("terminationGracePeriodSeconds %s < gate.drain %s + gate.shutdown_timeout %s + margin %s", got, drain, shutdown, shutdownMargin)
	}
	// The drain is there for the kubelet to see /ready fail and the
	// endpoint to be removed: it must outlast the readiness probe's
	// detection.
	rp := b.container(t).ReadinessProbe
	if detect := time.Duration(rp.PeriodSeconds*rp.FailureThreshold) * time.Second; drain <= detect {
		t.Errorf("gate.drain %s does not outlast the readiness probe's detection (%s)", drain, detect)
	}
}

func TestAvailability(t *testing.T) {
	b := render(t)
	spec := b.deployment.Spec
	if spec.Replicas == nil || *spec.Replicas < 2 {
		t.Errorf("replicas %v, want 2 or more", spec.Replicas)
	}
	b.selects(t, "the Deployment's", spec.Selector)

	if b.pdb.Spec.MaxUnavailable == nil || *b.pdb.Spec.MaxUnavailable != intstr.FromInt32(1) || b.pdb.Spec.MinAvailable != nil {
		t.Errorf("PodDisruptionBudget maxUnavailable %v minAvailable %v, want maxUnavailable 1 alone", b.pdb.Spec.MaxUnavailable, b.pdb.Spec.MinAvailable)
	}
	b.selects(t, "the PodDisruptionBudget's", b.pdb.Spec.Selector)

	pod := spec.Template.Spec
	var keys []string
	for _, c := range pod.TopologySpreadConstraints {
		keys = append(keys, c.TopologyKey)
		if c.WhenUnsatisfiable != corev1.ScheduleAnyway {
			t.Errorf("spread over %s is %s, want ScheduleAnyway: a required spread strands replicas as Pending on small clusters", c.TopologyKey, c.WhenUnsatisfiable)
		}
		b.selects(t, "the spread over "+c.TopologyKey+"'s", c.LabelSelector)
	}
	slices.Sort(keys)
	if want := []string{"kubernetes.io/hostname", "topology.kubernetes.io/zone"}; !slices.Equal(keys, want) {
		t.Errorf("topologySpreadConstraints over %v, want %v", keys, want)
	}
	if a := pod.Affinity; a != nil && a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
		t.Error("required pod anti-affinity strands replicas as Pending on small clusters")
	}
}

func TestSecurityContext(t *testing.T) {
	b := render(t)
	pod := b.deployment.Spec.Template.Spec
	c := b.container(t)
	psc, sc := pod.SecurityContext, c.SecurityContext
	if psc == nil || sc == nil {
		t.Fatal("the pod or the container has no securityContext")
	}
	isTrue := func(p *bool) bool { return p != nil && *p }
	if !isTrue(psc.RunAsNonRoot) || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Errorf("the pod does not run as a non-root user: runAsNonRoot %v runAsUser %v", psc.RunAsNonRoot, psc.RunAsUser)
	}
	if psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Error("the pod has no RuntimeDefault seccomp profile")
	}
	if !isTrue(sc.ReadOnlyRootFilesystem) {
		t.Error("the root filesystem is writable")
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("privilege escalation is allowed")
	}
	if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0 {
		t.Errorf("capabilities %+v, want every one dropped", sc.Capabilities)
	}
	if sc.Privileged != nil && *sc.Privileged {
		t.Error("the container is privileged")
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := c.Resources.Requests[r]; !ok || q.IsZero() {
			t.Errorf("no %s request", r)
		}
	}
}

// TestMonitoring: the ServiceMonitor scrapes the pods through the Service
// as the job the mixin selects by default, and the PrometheusRule holds
// exactly the rules of rules/.
func TestMonitoring(t *testing.T) {
	b := render(t)
	svc := b.service
	if len(svc.Spec.Selector) == 0 || !labels.SelectorFromSet(svc.Spec.Selector).Matches(b.podLabels()) {
		t.Errorf("Service selector %v does not select the Deployment's pods", svc.Spec.Selector)
	}
	c := b.container(t)
	svcPorts := map[string]bool{}
	for _, p := range svc.Spec.Ports {
		svcPorts[p.Name] = true
		containerPort(t, c, p.TargetPort)
	}

	sm := b.serviceMonitor.Spec
	s, err := metav1.LabelSelectorAsSelector(&sm.Selector)
	if err != nil || s.Empty() || !s.Matches(labels.Set(svc.Labels)) {
		t.Errorf("ServiceMonitor selector %v does not select the Service (labels %v)", sm.Selector, svc.Labels)
	}
	if len(sm.Endpoints) == 0 {
		t.Fatal("ServiceMonitor has no endpoints")
	}
	for _, e := range sm.Endpoints {
		if !svcPorts[e.Port] {
			t.Errorf("ServiceMonitor scrapes port %q, which the Service does not name", e.Port)
		}
		if e.Path != "" && e.Path != "/metrics" {
			t.Errorf("ServiceMonitor scrapes %s, not /metrics", e.Path)
		}
	}
	if job := b.scrapeJob(); job != "probegate" {
		t.Errorf("the scrape job is %q; the mixin's default selector is job=\"probegate\"", job)
	}

	want := map[string]bool{}
	for _, f := range []string{"rules/probegate-alerts.yaml", "rules/probegate-rules.yaml"} {
		rf, err := lint.LoadRuleFile(filepath.Join(deploytest.RepoRoot(t), f))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rf.Rules() {
			want[fmt.Sprintf("%s%s: %s", r.Alert, r.Record, strings.TrimSpace(r.Expr))] = true
		}
	}
	got := map[string]bool{}
	for _, g := range b.prometheusRule.Spec.Groups {
		for _, r := range g.Rules {
			got[fmt.Sprintf("%s%s: %s", r.Alert, r.Record, strings.TrimSpace(r.Expr.String()))] = true
		}
	}
	for r := range want {
		if !got[r] {
			t.Errorf("the PrometheusRule lacks %s", r)
		}
	}
	for r := range got {
		if !want[r] {
			t.Errorf("the PrometheusRule has %s, which rules/ does not", r)
		}
	}
}

// scrapeJob is the job label prometheus-operator gives the targets of the
// ServiceMonitor: the value of the Service's label that jobLabel names,
// when the Service has it, else the Service's name.
func (b *base) scrapeJob() string {
	if l := b.serviceMonitor.Spec.JobLabel; l != "" && b.service.Labels[l] != "" {
		return b.service.Labels[l]
	}
	return b.service.Name
}

// TestJobSurvivesANamePrefix renders an overlay that prefixes every name,
// as one per cluster or region does, and checks that the rules it ships
// still select the job its ServiceMonitor scrapes: a job renamed to
// eu1-probegate would leave ProbegateDown firing through absent() and
// every other alert silent.
func TestJobSurvivesANamePrefix(t *testing.T) {
	dir := t.TempDir()
	files, err := filepath.Glob("*.y*ml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests here: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, "base"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "base", f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	overlay := filepath.Join(dir, "eu1")
	if err := os.MkdirAll(overlay, 0o755); err != nil {
		t.Fatal(err)
	}
	kustomization := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamePrefix: eu1-\nresources:\n  - ../base\n"
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		t.Fatal(err)
	}
	b := renderDir(t, overlay)
	if b.service.Name != "eu1-probegate" {
		t.Fatalf("the overlay renders the Service as %q, want eu1-probegate: the test no longer prefixes names", b.service.Name)
	}
	job := b.scrapeJob()
	var matched int
	for _, g := range b.prometheusRule.Spec.Groups {
		for _, r := range g.Rules {
			parsed, err := lint.Parse(r.Expr.String())
			if err != nil {
				t.Fatalf("rule %s%s: %v", r.Alert, r.Record, err)
			}
			for _, sel := range parsed.Selectors {
				for _, m := range sel.Matchers {
					if m.Label != "job" {
						continue
					}
					if !matches(t, m, job) {
						t.Errorf("rule %s%s selects %s{%s}, which the scrape job %q does not match", r.Alert, r.Record, sel.Metric, m, job)
					}
					matched++
				}
			}
		}
	}
	if matched == 0 {
		t.Error("no rule selects a job")
	}
}

// matches reports whether a label value satisfies a PromQL matcher.
func matches(t *testing.T, m lint.Matcher, value string) bool {
	t.Helper()
	ok, err := m.Matches(value)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// TestNetworkPolicy: the pods admit the health port, which serves nothing
// but /health and /ready, from anywhere (kubelets, load balancers), and
// the main port only from the pods of their namespace that carry the
// labels docs/operations.md documents: the namespace's Prometheus, as
// prometheus-operator labels it, and probegate's clients. No other port,
// and nothing from elsewhere.
func TestNetworkPolicy(t *testing.T) {
	b := render(t)
	np := b.networkPolicy.Spec
	b.selects(t, "the NetworkPolicy's", &np.PodSelector)
	if !slices.Contains(np.PolicyTypes, networkingv1.PolicyTypeIngress) {
		t.Errorf("policyTypes %v: ingress is not restricted", np.PolicyTypes)
	}
	c := b.container(t)
	anywhere := map[int32]bool{}
	peers := map[int32][]networkingv1.NetworkPolicyPeer{}
	for i, r := range np.Ingress {
		if len(r.Ports) == 0 {
			t.Errorf("ingress rule %d admits every port", i)
		}
		for _, p := range r.Ports {
			if p.Port == nil || p.EndPort != nil {
				t.Errorf("ingress rule %d admits a range of ports", i)
				continue
			}
			port := containerPort(t, c, *p.Port).ContainerPort
			if len(r.From) == 0 {
				anywhere[port] = true
			}
			peers[port] = append(peers[port], r.From...)
		}
	}

	health := containerPort(t, c, intstr.FromString("health")).ContainerPort
	for _, probe := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
		if port := containerPort(t, c, probe.HTTPGet.Port).ContainerPort; port != health || !anywhere[port] {
			t.Errorf("the kubelet's probe of port %d is not admitted from anywhere on the health port %d", port, health)
		}
	}
	main := containerPort(t, c, intstr.FromString("http")).ContainerPort
	for port := range peers {
		if port != health && port != main {
			t.Errorf("port %d is admitted, which is neither the health nor the main port", port)
		}
	}
	if anywhere[main] {
		t.Errorf("the main port %d, with the fan-out and the admin API, is admitted from anywhere", main)
	}

	docs, err := os.ReadFile(filepath.Join(deploytest.RepoRoot(t), "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	admits := func(podLabels labels.Set) bool {
		for _, p := range peers[main] {
			if p.PodSelector == nil || p.NamespaceSelector != nil || p.IPBlock != nil {
				continue
			}
			if s, err := metav1.LabelSelectorAsSelector(p.PodSelector); err == nil && s.Matches(podLabels) {
				return true
			}
		}
		return false
	}
	for _, p := range peers[main] {
		if p.PodSelector == nil || p.NamespaceSelector != nil || p.IPBlock != nil {
			t.Errorf("the main port is admitted from %+v, beyond the pods of the namespace", p)
			continue
		}
		if s, err := metav1.LabelSelectorAsSelector(p.PodSelector); err != nil || s.Empty() {
			t.Errorf("the main port is admitted from every pod of the namespace (%v)", err)
		}
		for k, v := range p.PodSelector.MatchLabels {
			if !strings.Contains(string(docs), k+": ") || !strings.Contains(string(docs), v) {
				t.Errorf("docs/operations.md does not document the pod label %s=%s that the main port admits", k, v)
			}
		}
	}
	// The pods prometheus-operator runs for a Prometheus resource.
	prometheus := labels.Set{"app.kubernetes.io/name": "prometheus", "app.kubernetes.io/managed-by": "prometheus-operator",
		"app.kubernetes.io/instance": "k8s", "prometheus": "k8s"}
	if !admits(prometheus) {
		t.Errorf("the namespace's Prometheus (pod labels %v) may not scrape the main port", prometheus)
	}
	if !admits(labels.Set{"probegate-client": "true"}) {
		t.Error("a client labelled probegate-client=true may not reach the main port")
	}
	if admits(labels.Set{"app.kubernetes.io/name": "something-else"}) {
		t.Error("any pod of the namespace may reach the main port")
	}
}

// TestImageIsTheRelease: the base runs the release of the VERSION file,
// tagged "v" + VERSION as the Prometheus images are, never a moving tag
// such as latest.
func TestImageIsTheRelease(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(deploytest.RepoRoot(t), "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	want := "probegate:v" + strings.TrimSpace(string(data))
	if got := render(t).container(t).Image; got != want {
		t.Errorf("the Deployment runs %s, want %s (the VERSION file)", got, want)
	}
}
