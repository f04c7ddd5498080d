package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// The quick-start of Cluster API's own e2e tests (the ClusterClass and the development Cluster of its Docker
// provider, from the sigs.k8s.io/cluster-api/test module this module pins), as clusterctl would generate them.
var quickStartEnv = map[string]string{
	"CLUSTER_NAME": "dev", "NAMESPACE": "default", "CONTROL_PLANE_MACHINE_COUNT": "3",
	"WORKER_MACHINE_COUNT": "2", "KUBERNETES_VERSION": "v1.35.4",
}

func quickStart(t *testing.T, cluster string) []map[string]any {
	dir := filepath.Join(testModuleDir(t), "infrastructure/docker/templates")
	return append(manifest(t, filepath.Join(dir, "clusterclass-quick-start.yaml"), quickStartEnv),
		manifest(t, filepath.Join(dir, cluster), quickStartEnv)...)
}

func TestQuickStart(t *testing.T) {
	out := renderOK(t, quickStart(t, "cluster-template-development.yaml"))

	kcp := out["controlPlane"].(map[string]any)["object"].(map[string]any)
	expect(t, kcp["apiVersion"], "controlplane.cluster.x-k8s.io/v1beta2")
	expect(t, at(kcp, "spec", "replicas"), 3.0)
	expect(t, at(kcp, "spec", "version"), "v1.35.4")
	// The podSecurityStandard patch, rendered by Cluster API's patch engine from the defaulted variable.
	apiServer := at(kcp, "spec", "kubeadmConfigSpec", "clusterConfiguration", "apiServer").(map[string]any)
	expect(t, apiServer["extraArgs"], []any{map[string]any{"name": "admission-control-config-file", "value": "/etc/kubernetes/kube-apiserver-admission-pss.yaml"}})
	pss := at(kcp, "spec", "kubeadmConfigSpec", "files").([]any)[0].(map[string]any)["content"].(string)
	if !strings.Contains(pss, `enforce: "baseline"`) || !strings.Contains(pss, "pod-security.admission.config.k8s.io/v1\n") {
		t.Errorf("the PodSecurity admission configuration is not rendered from the variable and the version:\n%s", pss)
	}
	// The etcdImageTag patch is enabled only by a non-empty tag, and the development Cluster sets none.
	expect(t, at(kcp, "spec", "kubeadmConfigSpec", "clusterConfiguration", "etcd"), nil)

	cluster := out["cluster"].(map[string]any)
	expect(t, at(cluster, "spec", "controlPlaneRef", "name"), at(kcp, "metadata", "name"))
	expect(t, at(cluster, "spec", "infrastructureRef", "name"), at(out["infrastructureCluster"].(map[string]any), "metadata", "name"))
	expect(t, at(kcp, "spec", "machineTemplate", "spec", "infrastructureRef", "name"),
		at(out["controlPlane"].(map[string]any)["infrastructureMachineTemplate"].(map[string]any), "metadata", "name"))

	mds := out["machineDeployments"].([]any)
	if len(mds) != 1 {
		t.Fatalf("want one MachineDeployment, got %d", len(mds))
	}
	md := mds[0].(map[string]any)
	expect(t, md["topologyName"], "md-0")
	object := md["object"].(map[string]any)
	expect(t, at(object, "spec", "replicas"), 2.0)
	expect(t, at(object, "spec", "template", "spec", "version"), "v1.35.4")
	expect(t, at(object, "metadata", "labels", "topology.cluster.x-k8s.io/owned"), "")
	expect(t, at(object, "metadata", "labels", "topology.cluster.x-k8s.io/deployment-name"), "md-0")
	expect(t, at(md, "bootstrapTemplate", "kind"), "KubeadmConfigTemplate")
	expect(t, at(md, "infrastructureMachineTemplate", "spec", "template", "spec", "backend", "docker", "customImage"), "kindest/node:v1.35.4")
	expect(t, out["upgradePlan"], map[string]any{"controlPlane": []any{}, "machineDeployments": []any{}})
}

func TestQuickStartEtcdImageTag(t *testing.T) {
	objs := quickStart(t, "cluster-template-development.yaml")
	setVariable(t, objs, "etcdImageTag", "3.6.4-0")
	out := renderOK(t, objs)
	kcp := out["controlPlane"].(map[string]any)["object"].(map[string]any)
	expect(t, at(kcp, "spec", "kubeadmConfigSpec", "clusterConfiguration", "etcd", "local", "imageTag"), "3.6.4-0")
}

func TestVariableFailingItsSchema(t *testing.T) {
	objs := quickStart(t, "cluster-template-development.yaml")
	setVariable(t, objs, "podSecurityStandard", map[string]any{"enabled": true, "enforce": 12})
	errs := renderRefused(t, objs)
	if len(errs) != 1 || errs[0].Kind != "Cluster" || errs[0].Name != "dev" ||
		errs[0].Field != "spec.topology.variables[podSecurityStandard].value.enforce" || !strings.Contains(errs[0].Message, "string") {
		t.Fatalf("want the Cluster webhook's refusal of podSecurityStandard.enforce, got %+v", errs)
	}
}

func TestClusterClassRefusedByItsWebhook(t *testing.T) {
	objs := quickStart(t, "cluster-template-development.yaml")
	class := find(t, objs, "ClusterClass")
	schema := at(at(class, "spec", "variables").([]any)[0], "schema", "openAPIV3Schema").(map[string]any)
	schema["type"] = "text"
	delete(schema, "default")
	errs := renderRefused(t, objs)
	if len(errs) == 0 || errs[0].Kind != "ClusterClass" || errs[0].Field != "spec.variables[imageRepository].schema.openAPIV3Schema.type" {
		t.Fatalf("want the ClusterClass webhook's refusal of the variable's type, got %+v", errs)
	}
}

func TestMissingTemplate(t *testing.T) {
	var objs []map[string]any
	for _, o := range quickStart(t, "cluster-template-development.yaml") {
		if o["kind"] != "DevClusterTemplate" {
			objs = append(objs, o)
		}
	}
	errs := renderRefused(t, objs)
	if len(errs) != 1 || errs[0].Kind != "ClusterClass" || errs[0].Field != "spec.infrastructure.templateRef" {
		t.Fatalf("want the missing DevClusterTemplate named, got %+v", errs)
	}
}

func TestMachinePoolsRefused(t *testing.T) {
	errs := renderRefused(t, quickStart(t, "cluster-template-development-mp.yaml"))
	if len(errs) != 1 || errs[0].Kind != "Cluster" || errs[0].Field != "spec.topology.workers.machinePools" {
		t.Fatalf("want the MachinePool topology refused, got %+v", errs)
	}
}

// The v1beta1 ClusterClass of Cluster API's Runtime SDK e2e test, with its v1beta1 Cluster and templates, from the
// e2e data setup copies beside the CRDs.
func runtimeSDKV1Beta1(t *testing.T) []map[string]any {
	dir := filepath.Join(os.Getenv("HOME"), ".cache/capt/tools/cluster-api/v1.14.2/e2e-data/infrastructure-docker/main")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("Cluster API's e2e manifests are not in %s (npm run setup copies them): %v", dir, err)
	}
	env := map[string]string{
		"CLUSTER_NAME": "sdk", "NAMESPACE": "default", "KUBERNETES_VERSION": "v1.35.4", "CONTROL_PLANE_MACHINE_COUNT": "1",
		"WORKER_MACHINE_COUNT": "2", "DOCKER_SERVICE_CIDRS": "10.128.0.0/12", "DOCKER_POD_CIDRS": "192.168.0.0/16",
		"DOCKER_SERVICE_DOMAIN": "cluster.local",
	}
	return append(manifest(t, filepath.Join(dir, "clusterclass-quick-start-runtimesdk-v1beta1.yaml"), env),
		manifest(t, filepath.Join(dir, "cluster-template-topology-runtimesdk-v1beta1/cluster-runtimesdk.yaml"), env)...)
}

func TestV1Beta1ExternalPatchesRefused(t *testing.T) {
	errs := renderRefused(t, runtimeSDKV1Beta1(t))
	if len(errs) != 1 || errs[0].Kind != "ClusterClass" || errs[0].Name != "quick-start-runtimesdk-v1beta1" ||
		errs[0].Field != "spec.patches[0].external" {
		t.Fatalf("want the external patch refused, got %+v", errs)
	}
}

// Without its external patch (and the variables that patch's extension would have declared), the same v1beta1
// class renders: converted by Cluster API's conversion functions, its v1beta1 control plane template stamped out
// under the v1beta1 contract and the result converted to v1beta2.
func TestV1Beta1Converted(t *testing.T) {
	objs := runtimeSDKV1Beta1(t)
	for _, o := range objs {
		switch o["kind"] {
		case "ClusterClass":
			delete(o["spec"].(map[string]any), "patches")
		case "Cluster":
			delete(at(o, "spec", "topology").(map[string]any), "variables")
		}
	}
	out := renderOK(t, objs)
	expect(t, at(out["cluster"].(map[string]any), "spec", "topology", "classRef", "name"), "quick-start-runtimesdk-v1beta1")
	kcp := out["controlPlane"].(map[string]any)["object"].(map[string]any)
	expect(t, kcp["apiVersion"], "controlplane.cluster.x-k8s.io/v1beta2")
	expect(t, at(kcp, "spec", "machineTemplate", "spec", "infrastructureRef", "name"),
		at(out["controlPlane"].(map[string]any)["infrastructureMachineTemplate"].(map[string]any), "metadata", "name"))
	md := out["machineDeployments"].([]any)[0].(map[string]any)
	expect(t, at(md, "bootstrapTemplate", "apiVersion"), "bootstrap.cluster.x-k8s.io/v1beta2")
	expect(t, at(md, "object", "spec", "template", "spec", "failureDomain"), "fd4")
}

func TestMalformedInput(t *testing.T) {
	cluster := find(t, quickStart(t, "cluster-template-development.yaml"), "Cluster")
	noTopology := map[string]any{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "metadata": map[string]any{"name": "bare"}}
	for name, stdin := range map[string]string{
		"not JSON":     "apiVersion: v1",
		"no Cluster":   `{"objects": []}`,
		"two Clusters": string(requestJSON(t, []map[string]any{cluster, cluster})),
		"no topology":  string(requestJSON(t, []map[string]any{noTopology})),
		"over 4 MiB":   `{"objects": [], "pad": "` + strings.Repeat("x", maxInput) + `"}`,
	} {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), strings.NewReader(stdin), &stdout, &stderr); code != 2 {
				t.Fatalf("want exit 2, got %d: %s", code, stdout.String())
			}
			if stdout.Len() != 0 || strings.Count(stderr.String(), "\n") != 1 {
				t.Fatalf("want one line on stderr and nothing on stdout, got %q and %q", stderr.String(), stdout.String())
			}
		})
	}
}

func renderOK(t *testing.T, objs []map[string]any) map[string]any {
	t.Helper()
	stdout, code := runRequest(t, objs)
	if code != 0 {
		t.Fatalf("want exit 0, got %d: %s", code, stdout)
	}
	var out map[string]any
	if err := json.Unmarshal(stdout, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func renderRefused(t *testing.T, objs []map[string]any) []fieldError {
	t.Helper()
	stdout, code := runRequest(t, objs)
	if code != 1 {
		t.Fatalf("want exit 1, got %d: %s", code, stdout)
	}
	var out struct{ Errors []fieldError }
	if err := json.Unmarshal(stdout, &out); err != nil {
		t.Fatal(err)
	}
	return out.Errors
}

func runRequest(t *testing.T, objs []map[string]any) ([]byte, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), bytes.NewReader(requestJSON(t, objs)), &stdout, &stderr)
	if code == 2 {
		t.Fatalf("the request was taken as malformed: %s", stderr.String())
	}
	return stdout.Bytes(), code
}

func requestJSON(t *testing.T, objs []map[string]any) []byte {
	data, err := json.Marshal(map[string]any{"objects": objs})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// testModuleDir is where the Go module cache holds sigs.k8s.io/cluster-api/test at the version go.mod pins.
func testModuleDir(t *testing.T) string {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/cluster-api/test").Output()
	dir := strings.TrimSpace(string(out))
	if err != nil || dir == "" {
		t.Skipf("sigs.k8s.io/cluster-api/test is not in the Go module cache (go mod download fetches it): %v", err)
	}
	return dir
}

var (
	plainVar   = regexp.MustCompile(`\$\{(\w+)\}`)
	defaultVar = regexp.MustCompile(`\$\{(\w+):[-=]([^${}]*)\}`)
)

// manifest reads a multi-document YAML file after clusterctl-style substitution: ${X} from env, ${X:=d} and
// ${X:-d} from env or their default, innermost first.
func manifest(t *testing.T, path string, env map[string]string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for previous := ""; previous != text; {
		previous = text
		text = plainVar.ReplaceAllStringFunc(text, func(m string) string {
			if v, ok := env[plainVar.FindStringSubmatch(m)[1]]; ok {
				return v
			}
			return m
		})
		text = defaultVar.ReplaceAllStringFunc(text, func(m string) string {
			sub := defaultVar.FindStringSubmatch(m)
			if v, ok := env[sub[1]]; ok {
				return v
			}
			return sub[2]
		})
	}
	if m := plainVar.FindString(text); m != "" {
		t.Fatalf("%s: %s has no value in the test's environment", path, m)
	}
	var objs []map[string]any
	decoder := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(text), 4096)
	for {
		var o map[string]any
		if err := decoder.Decode(&o); errors.Is(err, io.EOF) {
			return objs
		} else if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if o != nil {
			objs = append(objs, o)
		}
	}
}

func find(t *testing.T, objs []map[string]any, kind string) map[string]any {
	t.Helper()
	for _, o := range objs {
		if o["kind"] == kind {
			return o
		}
	}
	t.Fatalf("no %s among the objects", kind)
	return nil
}

func setVariable(t *testing.T, objs []map[string]any, name string, value any) {
	t.Helper()
	for _, v := range at(find(t, objs, "Cluster"), "spec", "topology", "variables").([]any) {
		if v := v.(map[string]any); v["name"] == name {
			v["value"] = value
			return
		}
	}
	t.Fatalf("the Cluster has no variable %s", name)
}

func at(o any, path ...string) any {
	for _, key := range path {
		m, ok := o.(map[string]any)
		if !ok {
			return nil
		}
		o = m[key]
	}
	return o
}

func expect(t *testing.T, got, want any) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if !bytes.Equal(g, w) {
		t.Errorf("got %s, want %s", g, w)
	}
}
