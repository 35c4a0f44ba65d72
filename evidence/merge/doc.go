// Package merge joins the directories of a sharded attack into one scenario
// directory that analyze judges as one run (issue 15), and writes its
// merge.json (evidence.MergeRecord, which evidence.Load reads).
//
// A sharded attack (`rlbench attack --shard K/N`, one process per pod of a
// Kubernetes Indexed Job) leaves N shard directories, each with its own
// requests.jsonl and attack.json; the backend replicas leave their receipts
// (receipts.jsonl, or receipts/<source>.jsonl pulled by `rlbench collect
// receipts`); the proxies' stats are snapshotted once, wherever the
// operator ran `rlbench collect`. Merge joins them into one scenario
// directory that analyze judges as one run:
//
//   - requests.jsonl: every shard's requests, shard by shard in index order;
//   - receipts.jsonl: every receipt of every input, a receipt dropped only
//     when an identical one (every field equal, the replica included) was
//     already taken — the same replica's receipts collected twice;
//   - attack.json: one phase per shard, in index order (NewAttack);
//   - stats/, accesslog/, rls/, nginx/, haproxy/, faults.jsonl, scenario.json: taken
//     once; the same file in two inputs must be identical;
//   - merge.json (MergeRecord): the inputs, each shard's identity, start and
//     clock offset bound against every replica, and the problems found.
//
// The shards must cover the attack exactly once: each carries its index K,
// the count N and the digests of the unsharded attack (AttackShard); a
// missing or duplicated index, a shard of another attack, a shard with
// fewer requests than its IDs, and an ID sent by two shards are Problems
// of merge.json naming the shard and its directory. Load reports them
// (File MergeFile), which makes the scenario NOT_RUN: a merge that does not
// hold the whole attack is never judged as if it did.
//
// # Memory
//
// Merge holds no index of the requests or receipts: each is written to the
// output as read and recorded as one fixed-size record keyed by its ID;
// the records are sorted in chunks spilled to run files in a temporary
// directory inside the output's (removed before Merge returns) and the
// runs merged, so that each ID's request and receipts meet (spill.go,
// join.go). An ID sent again and a receipt identical to one taken before
// (same ID, same line hash, then the same bytes: a hash collision never
// drops a distinct receipt) are then removed from the written files by
// rewriting them, which only merges that have some pay for. Memory is one
// chunk and the runs' read buffers, whatever the number of requests.
//
// # Clock offsets
//
// Each shard's times are its own host's clock; receipts are the backend
// replica's. For a request of shard s with a receipt from replica r, let θ
// be r's clock minus s's clock. The request was received after it was sent
// and before its response ended, both on the true time line:
//
//	send + θ ≤ recv ≤ end + θ
//
// so θ ≤ recv − send and θ ≥ recv − end. Over all of the shard's requests
// that got a response from the backend (Class.FromBackend) and a receipt
// from r (the earliest, which precedes the response),
//
//	max(recv − end) ≤ θ ≤ min(recv − send)
//
// the bound NTP takes from one exchange (RFC 5905 section 8: the offset
// lies within half the round-trip delay of the estimate), here over many
// exchanges: the tightest pair wins, the minimum one-way delay on either
// side. ClockOffset records it per shard.
//
// Shards that read one clock have one θ against a replica, so their
// bounds intersect: MergeRecord.Clocks (MergeRecord.ClockGroups) groups
// the shards by the clock they read — the node (AttackSummary.Node: a
// Kubernetes pod's spec.nodeName, a Slurm task's SLURMD_NODENAME), else
// the host name — and keeps the intersection per replica. Four pods on one
// node are one clock, bounded by the tightest pairs of all four; a group
// whose intersection is empty is a Problem (the shards did not share a
// clock, or it stepped). analyze widens the model checker's timing
// uncertainty by the largest |θ| the clocks' bounds allow
// (MergeRecord.ClockBound; Limiter.ClockSkewNs).
package merge
