package main

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
)

// Cluster API's v1beta1 ClusterClass goes to v1beta2 and back unchanged, through its own conversion functions.
func TestConvertRoundTrip(t *testing.T) {
	var class map[string]any
	for _, o := range runtimeSDKV1Beta1(t) {
		if o["kind"] == "ClusterClass" {
			class = o
		}
	}
	convert := func(obj map[string]any, to string) map[string]any {
		raw, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		out, err := (&conversionRequest{DesiredAPIVersion: to, Objects: []json.RawMessage{raw}}).convert(context.Background())
		if err != nil {
			t.Fatalf("to %s: %v", to, err)
		}
		return out.Objects[0]
	}
	hub := convert(class, "cluster.x-k8s.io/v1beta2")
	expect(t, at(hub, "spec", "controlPlane", "templateRef", "kind"), "KubeadmControlPlaneTemplate")
	back := convert(hub, "cluster.x-k8s.io/v1beta1")
	// Cluster API's typed objects write an empty `metadata: {}` where the manifest had none, as its own webhook does.
	if !reflect.DeepEqual(withoutEmpty(back["spec"]), withoutEmpty(class["spec"])) {
		t.Fatalf("the round trip changed the spec:\n%v\n%v", back["spec"], class["spec"])
	}
	if _, err := (&conversionRequest{DesiredAPIVersion: "cluster.x-k8s.io/v1beta1", Objects: []json.RawMessage{[]byte(`{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Cluster","metadata":{"name":"c"}}`)}}).convert(context.Background()); err == nil {
		t.Fatal("a Cluster (capt converts it itself) must be refused here")
	}
}

// withoutEmpty drops empty objects, at any depth.
func withoutEmpty(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if m, ok := withoutEmpty(e).(map[string]any); ok && len(m) == 0 {
				continue
			}
			out[k] = withoutEmpty(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = withoutEmpty(e)
		}
		return out
	}
	return v
}
