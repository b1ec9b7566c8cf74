package sim

import (
	"fmt"

	"github.com/fusee-dev/fusee/journal/model"
)

// The workflow types. Together they write every record kind, send every
// message kind and end in every status; docs/simulator.md describes them.
// A script's choices come from c.h (seed, workflow ID, generation, label)
// and from what its journal recorded, so replaying it is exact.
//
// Every script is finite: bounded retries, bounded fan-out, waits with
// deadlines, continue-as-new chains and restarts counted down in the
// input. That is what makes `fusee sim drive` terminate.

const (
	second = int64(1000)
	minute = 60 * second
	hour   = 60 * minute
)

const (
	ok     = model.StatusOK
	failed = model.StatusFailed
)

func script(typ string) func(*ctx) {
	switch typ {
	case "order":
		return orderScript
	case "payment":
		return paymentScript
	case "batch":
		return batchScript
	case "item":
		return itemScript
	case "approval":
		return approvalScript
	case "service":
		return serviceScript
	case "client":
		return clientScript
	case "sleeper":
		return sleeperScript
	case "poller":
		return pollerScript
	}
	return func(c *ctx) { c.Finish(ok, []byte("unknown type")) }
}

// dur picks a duration: short runs finish within minutes, long ones wait
// for hours (they are what gen leaves unfinished).
func (c *ctx) dur(label string, shortLo, shortHi, longLo, longHi int64) int64 {
	if c.p.long {
		return between(c.h(label), longLo, longHi)
	}
	return between(c.h(label), shortLo, shortHi)
}

// childID names a child after its parent's identity: unique, and free of
// run numbers.
func childID(c *ctx, label string) string { return fmt.Sprintf("%s.%d.%s", c.v.wf, c.v.gen, label) }

func (c *ctx) childParams() params { return params{seed: c.p.seed, idx: c.p.idx, long: c.p.long} }

// nearest is a top-level workflow of type typ started shortly before this
// one ("" if none): the target of its signals, cancels and updates.
func (c *ctx) nearest(typ string) string { return nearestOfType(c.p.seed, c.p.idx, typ) }

func statusOr(okay bool) model.Status {
	if okay {
		return ok
	}
	return failed
}

// order: reserve (retried), pay through a child that may time out or fail,
// wait for a carrier's async callback, sleep, ship.
func orderScript(c *ctx) {
	c.Now()
	c.Step("reserve", pick(c.h("reserve"), 3), ok, true)
	c.SearchAttr("stage", "reserved")
	var dl int64
	if c.h("pay-deadline")%4 == 0 {
		dl = 6 * second
	}
	pay := c.Child("payment", childID(c, "pay"), c.childParams(), dl)
	if st := c.AwaitChild(pay); st != ok {
		c.Step("release", 0, ok, false)
		c.Finish(failed, []byte("payment "+st.String()))
	}
	if c.h("carrier")%2 == 0 {
		c.AwaitAsync(c.Async("carrier"))
	}
	c.Sleep("ship-delay", c.dur("ship-delay", 1*second, 20*second, 2*hour, 10*hour))
	c.Step("ship", pick(c.h("ship"), 2), ok, true)
	c.SearchAttr("stage", "shipped")
	c.Finish(ok, []byte("shipped"))
}

// payment (child of order): a charge retried up to three times; declined
// for good now and then.
func paymentScript(c *ctx) {
	final := ok
	if c.h("decline")%8 == 0 {
		final = failed
	}
	st := c.Step("charge", pick(c.h("charge"), 4), final, true)
	c.Random()
	c.Finish(st, []byte("charge "+st.String()))
}

// batch: fan out 2–5 item children, join them, merge, and continue as new
// while the chain lasts.
func batchScript(c *ctx) {
	n := 2 + pick(c.h("n"), 4)
	c.Step("split", 0, ok, false)
	kids := make([]uint32, n)
	for k := range kids {
		kids[k] = c.Child("item", childID(c, fmt.Sprintf("item%d", k)), c.childParams(), 0)
	}
	bad := 0
	for _, pos := range kids {
		if c.AwaitChild(pos) != ok {
			bad++
		}
	}
	c.Step("merge", 0, ok, true)
	if c.p.can > 0 {
		next := c.p
		next.can--
		c.ContinueAsNew(next)
	}
	c.Finish(statusOr(bad == 0), fmt.Appendf(nil, "%d items, %d failed", n, bad))
}

// item (child of batch): work for a while, record a random value, process.
func itemScript(c *ctx) {
	c.Sleep("work", c.dur("work", 1*second, 30*second, 1*hour, 4*hour))
	c.Random()
	c.Step("process", pick(c.h("process"), 3)/2, ok, true)
	c.Finish(ok, []byte("processed"))
}

// approval: wait for an "approve" signal from outside (sometimes sent
// before the wait, sometimes too late), then cancel a sleeper and notify a
// service.
func approvalScript(c *ctx) {
	approved := c.WaitSignal("approve", c.approvalTimeout())
	if approved {
		c.Step("approve", 0, ok, false)
	} else {
		c.Step("escalate", pick(c.h("escalate"), 2), ok, false)
	}
	if t := c.nearest("sleeper"); t != "" && c.h("cancel")%2 == 0 {
		c.CancelOther(t, "approval decided")
	}
	if t := c.nearest("service"); t != "" && c.h("notify")%2 == 0 {
		c.Signal(t, "notify")
	}
	c.Finish(statusOr(approved), nil)
}

func (c *ctx) approvalTimeout() int64 {
	return c.dur("timeout", 30*second, 5*minute, 1*hour, 6*hour)
}

// service: serve updates (from clients and from outside) until a "stop"
// signal or the end of its life.
func serviceScript(c *ctx) {
	c.SearchAttr("role", "service")
	c.WaitSignal("stop", c.dur("life", 2*minute, 10*minute, 3*hour, 9*hour))
	c.Step("drain", 0, ok, false)
	c.Finish(ok, []byte("stopped"))
}

// client: call an update on a service and sometimes tell it to stop.
func clientScript(c *ctx) {
	c.Random()
	st := ok
	if t := c.nearest("service"); t != "" {
		st = c.CallUpdate(t, "deposit", 1*minute)
		if c.h("stop")%3 == 0 {
			c.Signal(t, "stop")
		}
	}
	c.Step("record", 0, ok, false)
	c.Finish(statusOr(st == ok), []byte("update "+st.String()))
}

// sleeper: one long nap. Operators cancel, terminate or reset some; others
// hit their run deadline; approvals cancel a few.
func sleeperScript(c *ctx) {
	c.Sleep("nap", sleeperNap(c.p, c.v.wf, c.v.gen))
	c.Finish(ok, []byte("rested"))
}

func sleeperNap(p params, wf string, gen uint32) int64 {
	h := newHasher(p.seed).str(wf).u64(uint64(gen)).str("nap").sum()
	if p.long {
		return between(h, 2*hour, 12*hour)
	}
	return between(h, 10*second, 2*minute)
}

// poller: wait for an async callback answered by token, handle it, and
// continue as new while the chain lasts.
func pollerScript(c *ctx) {
	c.AwaitAsync(c.Async("callback"))
	c.Step("handle", 0, ok, true)
	if c.p.can > 0 {
		next := c.p
		next.can--
		c.ContinueAsNew(next)
	}
	c.Finish(ok, []byte("polled"))
}
