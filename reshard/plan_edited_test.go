package reshard_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/reshard"
)

// A plan edited by hand and given a checksum that matches the edit is
// refused as a plan that does not match the directory, with nothing
// changed: it is no bug of fusee's (issue 28 item 4: it said "this is a
// bug in fusee reshard: please report it").
func TestEditedPlanWithValidChecksum(t *testing.T) {
	dir := genDir(t, 3, 200, 43)
	p := makePlan(t, dir, 5)
	data, err := reshard.MarshalPlan(p)
	if err != nil {
		t.Fatal(err)
	}
	edited := regexp.MustCompile(`"new_run": ([0-9]+)`).ReplaceAll(data, []byte(`"new_run": 9${1}`))
	sumRE := regexp.MustCompile(`"checksum": "[0-9a-f]*"`)
	blank := sumRE.ReplaceAll(edited, []byte(`"checksum": ""`))
	h := sha256.Sum256(bytes.TrimSuffix(blank, []byte("\n")))
	resigned := sumRE.ReplaceAll(edited, []byte(`"checksum": "`+hex.EncodeToString(h[:])+`"`))
	bad, err := reshard.ParsePlan("plan.json", resigned)
	if err != nil {
		t.Fatalf("the re-signed plan does not parse: %v", err)
	}
	files := fileHashes(t, dir)
	_, err = reshard.Reshard(context.Background(), vfs.Default, dir, reshard.Options{Plan: bad, PlanPath: "plan.json"})
	var mismatch *reshard.PlanMismatchError
	if !errors.As(err, &mismatch) || strings.Contains(err.Error(), "bug") ||
		!strings.Contains(err.Error(), "plan plan.json does not match the directory") {
		t.Fatalf("an edited, re-signed plan: %v, want a PlanMismatchError", err)
	}
	if fileHashes(t, dir) != files {
		t.Fatal("a refused plan changed the directory")
	}
}
