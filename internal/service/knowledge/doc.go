// Package knowledge is the knowledge store of ADR-007 (DESIGN §8): Service
// is the store over a driver.Driver — objects, their statuses and
// append-only transition logs, edges, the claims of pipeline steps, and the
// version DAG of every object, with every rule written once for both
// dialects — and the pure algorithms of the Fork
// Resolution agent (issue 8): finding the merge base of the heads of a
// forked object in its version DAG, and merging JSON object contents three
// ways, field by field, against that base.
//
// The algorithms touch no store: the version DAG is given as a map from
// version number to parent numbers (versions are numbered within their
// object), contents as JSON, and true conflicts are handed to a Resolver
// (the model, or DeterministicResolver offline). Every function is
// deterministic: the same inputs give the same bytes, whatever the order in
// which heads are named.
//
// Version numbers are assumed to grow with time (a version's number is
// greater than its parents'), which is what the tie-breaking rules below
// rely on to prefer the most recent candidate; correctness does not depend
// on it.
package knowledge
