// Package plan is reshard's renumbering plan (docs/reshard.md §2, §4):
// pass 1's runs go in (a Pass, shard by shard), every run gets its new
// shard and number, and out comes a Plan that answers, for an old run,
// where it went (Lookup) and, for a new place, whose run it is
// (IdentityAt). It owns the compact run map and its rank sets; past the
// compact map's allowance, pass 1's run files, the assignment from them
// and the paged run map it makes; the details files a plan file's list
// is read from (Plan.EachRun); and the merge that is the one place the
// rule of §2 picks the runs that keep their number.
//
// A Plan is immutable once made and safe to read from several goroutines.
// The package must never open a shard, read a log or write outside the
// scratch directory it is given; it knows nothing of the rewrite, the
// switch or commands.
package plan
