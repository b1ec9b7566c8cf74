package check

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// workers is how many goroutines verify and dump spread their work over:
// one per core, at most maxWorkers (each holds a spill map's share of the
// budget or a batch of rendered lines).
func workers() int { return min(runtime.GOMAXPROCS(0), maxWorkers) }

const maxWorkers = 4

// inOrder runs work on every job produce emits, on n goroutines, and
// hands the results to consume one at a time in the order the jobs were
// emitted, so what consume writes does not depend on which goroutine was
// faster. At most 2n jobs are emitted and not yet consumed: memory is
// bounded by the jobs and results, not by how many there are. The error
// returned is the first in job order (a job's error, or consume's), or
// produce's; after one, produce's emit returns it and the jobs already
// emitted are finished but not consumed.
func inOrder[J, R any](n int, produce func(emit func(J) error) error, work func(worker int, job J) (R, error), consume func(R) error) error {
	type result struct {
		r   R
		err error
	}
	type task struct {
		job J
		out chan result
	}
	tasks := make(chan task, n)
	queue := make(chan chan result, 2*n)
	var failed atomic.Pointer[error] // the first error in job order, once consume has seen it
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range tasks {
				r, err := work(i, t.job)
				t.out <- result{r, err}
			}
		}()
	}
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		for out := range queue {
			res := <-out
			if failed.Load() != nil {
				continue
			}
			err := res.err
			if err == nil {
				err = consume(res.r)
			}
			if err != nil {
				failed.Store(&err)
			}
		}
	}()
	perr := produce(func(j J) error {
		if e := failed.Load(); e != nil {
			return *e
		}
		out := make(chan result, 1)
		queue <- out
		tasks <- task{j, out}
		return nil
	})
	close(tasks)
	close(queue)
	<-consumed
	wg.Wait()
	if e := failed.Load(); e != nil {
		return *e
	}
	return perr
}
