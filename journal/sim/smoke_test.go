package sim

import (
	"context"
	"encoding/json"
	"testing"
)

func TestSmoke(t *testing.T) {
	_, b := genMem(t, GenOptions{Shards: 3, Runs: 2000, Seed: 1})
	c := TakeCensus(b.sh)
	js, _ := json.MarshalIndent(c, "", " ")
	t.Logf("%s", js)
	e := reopenMem(b, Config{})
	if err := e.Drive(context.Background()); err != nil {
		t.Fatal(err)
	}
	c = TakeCensus(b.sh)
	js, _ = json.MarshalIndent(c, "", " ")
	t.Logf("%s", js)
	js, _ = json.MarshalIndent(e.stats, "", " ")
	t.Logf("%s", js)
}
