package main

import (
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// fieldError is one entry of the errors document: what Cluster API (or a refusal of this program) objects to, on
// which object, at which field path ("" when the error is about no field in particular).
type fieldError struct {
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Field   string `json:"field"`
	Message string `json:"message"`
}

// invalidError is a request Cluster API refuses (exit 1), as opposed to stdin that is not a request (exit 2).
type invalidError struct{ errors []fieldError }

func (e invalidError) Error() string {
	lines := make([]string, len(e.errors))
	for i, f := range e.errors {
		lines[i] = fmt.Sprintf("%s %s: %s: %s", f.Kind, f.Name, f.Field, f.Message)
	}
	return strings.Join(lines, "; ")
}

func invalid(kind, name, field, format string, args ...any) error {
	return invalidError{[]fieldError{{Kind: kind, Name: name, Field: field, Message: fmt.Sprintf(format, args...)}}}
}

// refused turns an error of Cluster API's webhooks, reconciler or generator into entries of the errors document:
// an API status (a webhook's Invalid) gives one entry per cause with its field path; any other error, one entry
// about the object as a whole.
func refused(kind, name string, err error) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		details := status.Status().Details
		if details != nil && len(details.Causes) > 0 {
			out := make([]fieldError, len(details.Causes))
			for i, c := range details.Causes {
				out[i] = fieldError{Kind: kind, Name: name, Field: c.Field, Message: c.Message}
			}
			return invalidError{out}
		}
	}
	return invalidError{[]fieldError{{Kind: kind, Name: name, Message: err.Error()}}}
}
