//go:build etcd

package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fusee-dev/fusee/ringfile/etcdstore/etcdtest"
)

var (
	etcdOnce    sync.Once
	etcdCluster *etcdtest.Cluster
)

// sharedEtcd is one single-member cluster for the tests of this file; each
// test uses its own namespaces. It lives until the test binary exits.
func sharedEtcd(t *testing.T) *etcdtest.Cluster {
	etcdOnce.Do(func() { etcdCluster = etcdtest.Start(&processLife{t}, 1) })
	return etcdCluster
}

type processLife struct{ *testing.T }

func (p *processLife) Cleanup(func()) {}
func (p *processLife) TempDir() string {
	dir, err := os.MkdirTemp("", "fusee-etcd-")
	if err != nil {
		p.Fatal(err)
	}
	return dir
}

type ringRun struct {
	code     int
	out, err string
}

func ringFusee(env []string, args ...string) ringRun {
	var out, errb bytes.Buffer
	code := Run(context.Background(), "test", args, strings.NewReader(""), &out, &errb, env)
	return ringRun{code, out.String(), errb.String()}
}

const testULID = "01ARZ3NDEKTSV4RRFFQ69G5FAV"

// The same history of ring commands, on a file and on etcd, gives the same
// exit codes and the same output once the policy's name (the file's path,
// or the etcd endpoints and key) and the file's line numbers are masked.
func TestEtcdRingCommandsGiveTheSameResultsOnAFileAndOnEtcd(t *testing.T) {
	c := sharedEtcd(t)
	fileDir, etcdDir := t.TempDir(), t.TempDir()
	file := filepath.Join(fileDir, "orders.ring")
	etcdTarget := []string{"--store", c.Store(), "--namespace", "orders"}
	etcdName := "etcd://" + strings.Join(c.Endpoints(), ",") + "/wiggle/coord/policy/orders"
	history := [][]string{
		{"init", "--shards", "8", "--cells", "cellA"}, // init has its own --namespace
		{"show"}, {"show", "--json"}, {"validate"}, {"validate", "--json"}, {"active-cells"},
		{"plan", "--split", "cellA:cellB", "-o", "PLANDIR/split.plan"},
		{"open-epoch", "--plan", "PLANDIR/split.plan"},
		{"open-epoch", "--plan", "PLANDIR/split.plan"},   // the plan is stale now: exit 5
		{"open-epoch", "--slots", "0-3=cellA,4-7=ghost"}, // an undeclared cell: refused
		{"open-epoch", "--slots", "0-3=cellA,4-7=cellC", "--new-cell", "cellC", "--expect-revision", "2", "--dry-run", "--json"},
		{"open-epoch", "--slots", "0-3=cellA,4-7=cellC", "--new-cell", "cellC", "--expect-revision", "1"},
		{"open-epoch", "--slots", "0-3=cellA,4-7=cellC@eu-west", "--new-cell", "cellC", "--expect-revision", "2"},
		{"show"}, {"show", "--epoch", "1", "--json"}, {"validate"}, {"validate", "--json"},
		{"resolve", "orders.e0.s5." + testULID, "orders.e1.s5." + testULID, "orders.e2.s5." + testULID, "wfi_legacy", "orders.e9.s1." + testULID, "other.e0.s1." + testULID},
		{"resolve", "--json", "orders.e2.s1." + testULID, "wfi_legacy"},
		{"active-cells", "--json"},
		{"retire", "--epoch", "0", "--force"},
		{"retire", "--epoch", "0", "--force"},
		{"retire", "--epoch", "2", "--force", "--json"},
		{"plan", "--rebalance", "--weights", "cellA=3,cellC=1", "--json"},
		{"export"}, {"export", "--epochs-only"},
		{"mint", "--cell", "cellB"}, // standby in epoch 2: refused
		// Shard sets per epoch: grown by a plan, a typo refused, shrunk.
		{"plan", "--add-shards", "8-9", "-o", "PLANDIR/grow.plan"},
		{"open-epoch", "--plan", "PLANDIR/grow.plan"},
		{"open-epoch", "--plan", "PLANDIR/grow.plan"}, // applied already
		{"open-epoch", "--slots", "0-3=cellA,4-7=cellC@eu-west"},
		{"open-epoch", "--slots", "0-3=cellA,4-7=cellC@eu-west,9=cellA", "--remove-shards", "8"},
		{"show"}, {"show", "--json"}, {"validate"},
		{"resolve", "orders.e3.s8." + testULID, "orders.e4.s9." + testULID, "orders.e2.s7." + testULID},
		{"resolve", "orders.e4.s8." + testULID},
		{"plan", "--remove-shards", "0-3"}, // would leave cellA with none
		{"export"},
		// Cell bindings: a claim, a replica, a conflict, no fingerprint, a
		// cell no ring places; pruned against the live nodes.
		{"bind", "--cell", "cellA", "--fingerprint", "db-a"},
		{"bind", "--cell", "cellA", "--fingerprint", "db-a", "--json"},
		{"bind", "--cell", "cellA", "--fingerprint", "db-other"},
		{"bind", "--cell", "cellX"},
		{"bind", "--cell", "cellX", "--fingerprint", "db-x", "--dry-run"},
		{"bind", "--cell", "cellX", "--fingerprint", "db-x", "--expect-revision", "3"},
		{"bind", "--cell", "cellX", "--fingerprint", "db-x"},
		{"bind", "--cell", "cellB", "--fingerprint", "db-b"},
		{"bindings"}, {"bindings", "--json"}, {"show"}, {"validate"},
		{"unbind", "--cell", "cellA", "--live", "PLANDIR/live.json"},
		{"prune-bindings", "--live", "PLANDIR/live.json", "--dry-run"},
		{"prune-bindings", "--live", "PLANDIR/live.json", "--json"},
		{"bind", "--cell", "cellX", "--fingerprint", "db-y"},
		{"unbind", "--cell", "cellX", "--live", "PLANDIR/none.json"},
		{"bindings", "--json"},
	}
	for _, dir := range []string{fileDir, etcdDir} {
		for name, text := range map[string]string{"live.json": `[{"namespace": "orders", "cell_id": "cellB"}]`, "none.json": `[]`} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	mask := func(s, name, dir string) string {
		s = strings.ReplaceAll(s, "--store "+c.Store()+" --namespace orders", "POLICY")
		s = strings.ReplaceAll(s, name, "POLICY")
		s = strings.ReplaceAll(s, dir, "PLANDIR")
		s = regexp.MustCompile(`POLICY:\d+:`).ReplaceAllString(s, "POLICY:")
		s = regexp.MustCompile(`"line": \d+,\s*`).ReplaceAllString(s, "")
		return s
	}
	for i, step := range history {
		fileArgs := append([]string{"ring", step[0], file}, step[1:]...)
		etcdArgs := append(append([]string{"ring", step[0]}, etcdTarget...), step[1:]...)
		if step[0] == "init" {
			fileArgs = append(fileArgs, "--namespace", "orders")
		}
		for j := range fileArgs {
			fileArgs[j] = strings.ReplaceAll(fileArgs[j], "PLANDIR", fileDir)
		}
		for j := range etcdArgs {
			etcdArgs[j] = strings.ReplaceAll(etcdArgs[j], "PLANDIR", etcdDir)
		}
		f, e := ringFusee(nil, fileArgs...), ringFusee(nil, etcdArgs...)
		fOut, eOut := mask(f.out, file, fileDir), mask(e.out, etcdName, etcdDir)
		fErr, eErr := mask(f.err, file, fileDir), mask(e.err, etcdName, etcdDir)
		fErr = strings.ReplaceAll(fErr, "the file is at", "the key is at") // the one word that differs
		if f.code != e.code || fOut != eOut || fErr != eErr {
			t.Errorf("step %d, ring %s: file and etcd differ\nfile: exit %d\n%s%s\netcd: exit %d\n%s%s",
				i, strings.Join(step, " "), f.code, fOut, fErr, e.code, eOut, eErr)
		}
		if testing.Verbose() {
			t.Logf("step %d ring %s: exit %d\n%s%s", i, strings.Join(step, " "), e.code, eOut, eErr)
		}
	}
	// Minted ids differ run to run; each resolves to its cell on both.
	for _, args := range [][]string{{"ring", "mint", file}, append([]string{"ring", "mint"}, etcdTarget...)} {
		r := ringFusee(nil, append(args, "--cell", "cellC", "--count", "3")...)
		ids := strings.Fields(r.out)
		if r.code != 0 || len(ids) != 3 {
			t.Fatalf("%v: exit %d, %q %s", args, r.code, r.out, r.err)
		}
		res := ringFusee(nil, append(append([]string{"ring", "resolve"}, args[2:]...), ids...)...)
		if res.code != 0 || len(regexp.MustCompile(`\scellC\s`).FindAllString(res.out, -1)) != 3 {
			t.Errorf("minted ids do not resolve to cellC: %s%s", res.out, res.err)
		}
	}
}

// A dry run on etcd prints the value it would write, in the reference's
// encoding, and writes nothing.
func TestEtcdRingDryRunPrintsTheValue(t *testing.T) {
	c := sharedEtcd(t)
	target := []string{"--store", c.Store(), "--namespace", "dry"}
	r := ringFusee(nil, append([]string{"ring", "init", "--shards", "2", "--cells", "a", "--dry-run"}, target...)...)
	want := `{"currentEpoch":0,"revision":1,"epochs":"{\"0\":{\"status\":\"OPEN\",\"ring\":[{\"shard\":0,\"cellId\":\"a\",\"region\":null},{\"shard\":1,\"cellId\":\"a\",\"region\":null}]}}"}` + "\n"
	if r.code != 0 || r.out != want {
		t.Fatalf("exit %d\n%s%s", r.code, r.out, r.err)
	}
	if r := ringFusee(nil, append([]string{"ring", "show"}, target...)...); r.code != 1 || !strings.Contains(r.err, "namespace dry is not coordinated yet") {
		t.Fatalf("after a dry run: exit %d %s", r.code, r.err)
	}
}

// Six fusee processes' worth of open-epoch race on one revision: exactly
// one wins each time, the others exit 5 with the file's message.
func TestEtcdRingOpenEpochRace(t *testing.T) {
	c := sharedEtcd(t)
	target := []string{"--store", c.Store(), "--namespace", "race"}
	if r := ringFusee(nil, append([]string{"ring", "init", "--shards", "32", "--cells", "a,b"}, target...)...); r.code != 0 {
		t.Fatal(r.err)
	}
	for round := range 2 {
		rev := 1 + round
		results := make([]ringRun, 6)
		var wg sync.WaitGroup
		for i := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				slots := fmt.Sprintf("0-%d=a,%d-31=b", 2+round*6+i, 3+round*6+i) // never the genesis 0-15=a
				results[i] = ringFusee(nil, append([]string{"ring", "open-epoch", "--slots", slots, "--expect-revision", fmt.Sprint(rev)}, target...)...)
			}()
		}
		wg.Wait()
		won := 0
		for i, r := range results {
			switch r.code {
			case 0:
				won++
			case ExitConflict:
				if !strings.Contains(r.err, fmt.Sprintf("--expect-revision expects revision %d but the key is at revision %d: it moved on; re-read it and retry", rev, rev+1)) {
					t.Errorf("writer %d: %s", i, r.err)
				}
			default:
				t.Errorf("writer %d: exit %d: %s", i, r.code, r.err)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d writers won", round, won)
		}
	}
	r := ringFusee(nil, append([]string{"ring", "show", "--json"}, target...)...)
	if !strings.Contains(r.out, `"revision": 3`) || !strings.Contains(r.out, `"current_epoch": 2`) {
		t.Fatalf("after two rounds: %s", r.out)
	}
}

// Push and pull move a policy between a file and etcd under import's
// forward-only rules; a pull keeps the file's fingerprints.
func TestEtcdRingPushAndPull(t *testing.T) {
	c := sharedEtcd(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "orders.ring")
	target := []string{"--store", c.Store(), "--namespace", "pushed"}
	if r := ringFusee(nil, "ring", "init", file, "--namespace", "pushed", "--shards", "4", "--cells", "a", "--fingerprint", "a=jdbc-1"); r.code != 0 {
		t.Fatal(r.err)
	}
	r := ringFusee(nil, append([]string{"ring", "push", file}, target...)...)
	if r.code != 0 || !strings.Contains(r.out, "pushed "+file) {
		t.Fatalf("push: exit %d %s%s", r.code, r.out, r.err)
	}
	if r := ringFusee(nil, append([]string{"ring", "push", file}, target...)...); r.code != 0 || !strings.Contains(r.out, "already holds this policy") {
		t.Fatalf("second push: exit %d %s%s", r.code, r.out, r.err)
	}
	// The policy moves on in etcd; the file is now behind.
	if r := ringFusee(nil, append([]string{"ring", "open-epoch", "--slots", "0-1=a,2-3=b", "--new-cell", "b"}, target...)...); r.code != 0 {
		t.Fatal(r.err)
	}
	if r := ringFusee(nil, append([]string{"ring", "push", file}, target...)...); r.code != 1 || !strings.Contains(r.err, "sealed") {
		t.Fatalf("pushing an older policy: exit %d %s%s", r.code, r.out, r.err)
	}
	r = ringFusee(nil, append([]string{"ring", "pull", file}, target...)...)
	if r.code != 0 || !strings.Contains(r.out, "now revision 2") {
		t.Fatalf("pull: exit %d %s%s", r.code, r.out, r.err)
	}
	text, _ := os.ReadFile(file)
	if !strings.Contains(string(text), "cell a fingerprint=jdbc-1\n") || !strings.Contains(string(text), "epoch 1 open shards=0-3\n  0-1 a\n  2-3 b\n") {
		t.Fatalf("pulled file:\n%s", text)
	}
	// Bindings travel too: the push claimed a's in etcd; one a node made
	// in etcd comes back with a pull; a cell bound to two fingerprints,
	// one on each side, is refused both ways, naming both.
	if r := ringFusee(nil, append([]string{"ring", "bindings"}, target...)...); r.code != 0 || !strings.Contains(r.out, "pushed     a     jdbc-1") {
		t.Fatalf("bindings in etcd after the push: %s%s", r.out, r.err)
	}
	if r := ringFusee(nil, append([]string{"ring", "bind", "--cell", "b", "--fingerprint", "jdbc-2"}, target...)...); r.code != 0 {
		t.Fatal(r.err)
	}
	if r := ringFusee(nil, append([]string{"ring", "pull", file}, target...)...); r.code != 0 {
		t.Fatalf("pull: %s", r.err)
	}
	if text, _ := os.ReadFile(file); !strings.Contains(string(text), "cell b fingerprint=jdbc-2\n") {
		t.Fatalf("the pull did not carry etcd's binding of b:\n%s", text)
	}
	// A binding a registering node made in etcd, which leaves the policy's
	// revision as it was, comes over with a pull, at the next revision.
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Put(context.Background(), "/wiggle/coord/cellbinding/pushed/d", "jdbc-node"); err != nil {
		t.Fatal(err)
	}
	if r := ringFusee(nil, append([]string{"ring", "pull", file}, target...)...); r.code != 0 || !strings.Contains(r.out, "pulled") {
		t.Fatalf("pulling a node's binding: exit %d %s%s", r.code, r.out, r.err)
	}
	if text, _ := os.ReadFile(file); !strings.Contains(string(text), "cell d fingerprint=jdbc-node\n") {
		t.Fatalf("the pull did not carry the node's binding of d:\n%s", text)
	}
	if r := ringFusee(nil, "ring", "bind", file, "--cell", "c", "--fingerprint", "jdbc-file"); r.code != 0 {
		t.Fatal(r.err)
	}
	if r := ringFusee(nil, append([]string{"ring", "bind", "--cell", "c", "--fingerprint", "jdbc-etcd"}, target...)...); r.code != 0 {
		t.Fatal(r.err)
	}
	before, _ := os.ReadFile(file)
	r = ringFusee(nil, append([]string{"ring", "push", file}, target...)...)
	if r.code != 1 || !strings.Contains(r.err, "cell c of pushed is bound to fingerprint jdbc-etcd, and jdbc-file is another database") {
		t.Fatalf("pushing a conflicting binding: exit %d %s%s", r.code, r.out, r.err)
	}
	r = ringFusee(nil, append([]string{"ring", "pull", file}, target...)...)
	if after, _ := os.ReadFile(file); r.code != 1 || !strings.Contains(r.err, "cell c of pushed is bound to fingerprint jdbc-file, and jdbc-etcd is another database") || string(after) != string(before) {
		t.Fatalf("pulling a conflicting binding: exit %d %s%s", r.code, r.out, r.err)
	}
	fresh := filepath.Join(dir, "fresh.ring")
	if r := ringFusee(nil, append([]string{"ring", "pull", fresh}, target...)...); r.code != 0 {
		t.Fatalf("pull into a new file: %s", r.err)
	}
	if r := ringFusee(nil, "ring", "validate", fresh); r.code != 0 {
		t.Fatalf("the pulled file: %s%s", r.out, r.err)
	}
}

// The errors an operator meets name what to do.
func TestEtcdRingErrors(t *testing.T) {
	c := sharedEtcd(t)
	r := ringFusee(nil, "ring", "show", "--store", "etcd://127.0.0.1:1", "--namespace", "orders", "--command-timeout", "300ms", "--dial-timeout", "200ms")
	if r.code != 1 || !strings.Contains(r.err, "etcd at 127.0.0.1:1 did not answer reading /wiggle/coord/policy/orders within") {
		t.Errorf("unreachable: exit %d %s", r.code, r.err)
	}
	r = ringFusee(nil, "ring", "show", "--store", c.Store(), "--namespace", "nowhere")
	if r.code != 1 || !strings.Contains(r.err, "namespace nowhere is not coordinated yet") {
		t.Errorf("absent: exit %d %s", r.code, r.err)
	}
	// The endpoints may come from the environment; the namespace may not.
	env := []string{"FUSEE_STORE=" + c.Store(), "FUSEE_NAMESPACE=nowhere"}
	r = ringFusee(env, "ring", "show")
	if r.code != ExitUsage || !strings.Contains(r.err, "--store needs --namespace NS") {
		t.Errorf("namespace from the environment: exit %d %s", r.code, r.err)
	}
	r = ringFusee(env, "ring", "show", "--namespace", "nowhere")
	if r.code != 1 || !strings.Contains(r.err, "not coordinated yet") {
		t.Errorf("store from the environment: exit %d %s", r.code, r.err)
	}
	r = ringFusee(nil, "ring", "show", "somefile.ring", "--store", c.Store(), "--namespace", "x")
	if r.code != ExitUsage || !strings.Contains(r.err, "give FILE or --store, not both") {
		t.Errorf("FILE and --store: exit %d %s", r.code, r.err)
	}
}
