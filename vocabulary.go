package cks

// The knowledge vocabulary (ADR-007): the object kinds, statuses and edge
// types the pipeline, the knowledge sweepers and the knowledge agents write
// and read, and the task types the sweepers enqueue for the agents. They
// cross the wire (an object's kind and current_status, an edge's types, a
// task's type), so a client reads them here without the server; each is
// defined here only.

// Object kinds.
const (
	// KindQuestion is a research question moving through the pipeline.
	KindQuestion = "question"
	// KindClaim is a claim the Researcher drew from the corpus.
	KindClaim = "claim"
	// KindSynthesis is the Synthesizer's answer from accepted claims.
	KindSynthesis = "synthesis"
	// KindCritique is a reasoning node of the Critic (the pipeline's step
	// and the agent).
	KindCritique = "critique"
	// KindRationale is a reasoning node of the Arbiter or of a merge.
	KindRationale = "rationale"
	// KindModelReply keeps a model reply a step could not use.
	KindModelReply = "model_reply"
	// KindInference is an object derived from premises (its content names
	// them), which the inference_staleness sweeper watches.
	KindInference = "inference"
)

// ReasoningKinds are the kinds of reasoning nodes: objects that explain
// others rather than being knowledge themselves.
var ReasoningKinds = [...]string{KindCritique, KindRationale, KindModelReply}

// The statuses of a question (its current_status in the pipeline).
const (
	StatusAwaitingResearch    = "awaiting_research"
	StatusNeedsResearch       = "needs_research"
	StatusAwaitingCritique    = "awaiting_critique"
	StatusAwaitingSynthesis   = "awaiting_synthesis"
	StatusAwaitingArbitration = "awaiting_arbitration"
	// StatusResolved is terminal success: a synthesis the Arbiter
	// validated.
	StatusResolved = "resolved"
	// StatusNeedsInput parks a question the pipeline could not resolve
	// within its rounds (or whose steps kept failing); the reason is a
	// reasoning node.
	StatusNeedsInput = "needs_input"
)

// FinalStatuses are the statuses no pipeline step claims an object from
// (a question resolved, or parked in needs_input): the retention sweeper
// may archive the old transition log of objects in them
// (CKS_RETENTION_KNOWLEDGE).
var FinalStatuses = []string{StatusResolved, StatusNeedsInput}

// The statuses of a claim.
const (
	// StatusProposed, StatusAccepted and StatusRejected are set by the
	// pipeline's Critic.
	StatusProposed = "proposed"
	StatusAccepted = "accepted"
	StatusRejected = "rejected"
	// StatusDisputed is what the Critic agent makes the losing claim of a
	// contradiction; the contradiction sweeper passes disputed claims over.
	StatusDisputed = "disputed"
)

// Edge types (ADR-007 §4). Every edge the pipeline and the agents write has
// the base type BaseDependsOn (whose cycles graph_health reports); the
// semantic types say what it means.
const (
	BaseDependsOn  = "depends_on"
	SemAnswers     = "answers"      // claim → question
	SemCritiques   = "critiques"    // critique → question
	SemSupports    = "supports"     // critique → accepted claim
	SemRefutes     = "refutes"      // critique → rejected claim; rationale → question
	SemSynthesizes = "synthesizes"  // synthesis → question
	SemCites       = "cites"        // synthesis → claim
	SemResolves    = "resolves"     // rationale → question; merge rationale → object
	SemFailedReply = "failed_reply" // model reply → question
	SemParks       = "parks"        // rationale → question (why it parked)
)

// The task types the knowledge sweepers enqueue for the knowledge agents,
// with their payloads.
const (
	// TaskTypeResolveFork: {"object_id": N, "heads": [V1, V2, …]} — the
	// fork_detection sweeper found object N with those heads (the Fork
	// Resolution agent).
	TaskTypeResolveFork = "resolve_fork"
	// TaskTypeCritique: {"claims": [A, B]} — the contradiction sweeper found
	// claims A and B contradicting each other (the Critic agent).
	TaskTypeCritique = "critique"
	// TaskTypeRederive: {"object_id": N} — a premise of inference N changed
	// (inference_staleness; the Enrichment agent).
	TaskTypeRederive = "rederive"
	// TaskTypeEnrich: {"object_id": N} — object N is to be linked to related
	// ones (graph_health, for orphans; the Enrichment agent).
	TaskTypeEnrich = "enrich"
)
