// Package plan is reshard's renumbering plan (docs/reshard.md §2, §4):
// pass 1's runs go in (a Pass, shard by shard), every run gets its new
// shard and number, and out comes a Plan that answers, for an old run,
// where it went (Lookup) and, for a new place, whose run it is
// (IdentityAt). It owns the compact run map and its rank sets, the spill
// maps' assignment, and the paged run map that replaces them when the
// runs outgrow the budget.
//
// A Plan is immutable once made and safe to read from several goroutines.
// The package must never open a shard, read a log or write outside the
// scratch paths it is given; it knows nothing of the rewrite, the switch
// or commands.
package plan
