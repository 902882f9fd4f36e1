// Package knowledge holds the pure algorithms of the Fork Resolution agent
// (issue 8, ADR-007, DESIGN §8): finding the merge base of the heads of a
// forked object in its version DAG, and merging JSON object contents three
// ways, field by field, against that base.
//
// Nothing here touches a store: the version DAG is given as a map from
// version id to parent ids, contents as JSON, and true conflicts are handed
// to a Resolver (the model, or DeterministicResolver offline). Every
// function is deterministic: the same inputs give the same bytes, whatever
// the order in which heads are named.
//
// Version ids are assumed to grow with time (a version's id is greater than
// its parents' ids), which is what the tie-breaking rules below rely on to
// prefer the most recent candidate; correctness does not depend on it.
package knowledge
