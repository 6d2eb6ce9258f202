// yamltruth prints, as a JSON array on stdout, the documents of the manifest on stdin exactly as
// kubectl sends them to the API server: kubectl's resource builder decodes a file with
// apimachinery's YAML-or-JSON decoder into one RawExtension per document, skips empty and null
// ones, and the object is then read into unstructured (apimachinery's JSON reading, integral
// numbers as int64, others as float64) and written out again with encoding/json. A document
// kubectl would refuse makes it exit 1 with the reason on stderr.
//
// A test helper of kubectl-migrate (tests/suite/yaml_truth.rs), built by tests/yamltruth/build.sh.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

func main() {
	decoder := utilyaml.NewYAMLOrJSONDecoder(os.Stdin, 4096)
	docs := []json.RawMessage{}
	for {
		var ext runtime.RawExtension
		if err := decoder.Decode(&ext); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			fail(err)
		}
		raw := bytes.TrimSpace(ext.Raw)
		if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
			continue
		}
		var object interface{}
		if err := utiljson.Unmarshal(raw, &object); err != nil {
			fail(err)
		}
		out, err := json.Marshal(object)
		if err != nil {
			fail(err)
		}
		docs = append(docs, out)
	}
	out, err := json.Marshal(docs)
	if err != nil {
		fail(err)
	}
	os.Stdout.Write(out)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
