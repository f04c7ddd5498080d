package main

import (
	"encoding/json"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// maxInput bounds stdin: a cluster, its class and its templates are tens of KiB.
const maxInput = 4 << 20

// malformedError is stdin that is not a render request at all (exit 2), as opposed to a request Cluster API refuses.
type malformedError struct{ message string }

func (e malformedError) Error() string { return e.message }

func malformed(format string, args ...any) error {
	return malformedError{fmt.Sprintf(format, args...)}
}

// request is stdin's document: the Cluster, its ClusterClass and the class's templates, in any order; or instead
// an upgrade plan to compute, or objects to convert.
type request struct {
	Objects     []json.RawMessage  `json:"objects"`
	UpgradePlan *planRequest       `json:"upgradePlan"`
	Convert     *conversionRequest `json:"convert"`
}

func readRequest(r io.Reader) (*request, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxInput+1))
	if err != nil {
		return nil, malformed("cannot read stdin: %v", err)
	}
	if len(data) > maxInput {
		return nil, malformed("stdin is larger than %d MiB: send only the Cluster, its ClusterClass and its templates", maxInput>>20)
	}
	var req request
	if err := json.Unmarshal(data, &req); err != nil {
		return nil, malformed(`stdin is not JSON of the form {"objects": [...]}, {"upgradePlan": {...}} or {"convert": {...}}: %v`, err)
	}
	return &req, nil
}

// readObjects reads the request's objects, each with its namespace defaulted as the API server would for a
// namespaced kind.
func readObjects(req *request) ([]*unstructured.Unstructured, error) {
	objs := make([]*unstructured.Unstructured, 0, len(req.Objects))
	for i, raw := range req.Objects {
		// Unstructured's own decoder keeps integers as int64, as objects read from the API server have them.
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			return nil, malformed("objects[%d] is not a Kubernetes object: %v", i, err)
		}
		if u.GetAPIVersion() == "" || u.GetName() == "" {
			return nil, malformed("objects[%d] (%s) has no apiVersion or metadata.name", i, u.GetKind())
		}
		if u.GetNamespace() == "" {
			u.SetNamespace("default")
		}
		objs = append(objs, u)
	}
	return objs, nil
}
