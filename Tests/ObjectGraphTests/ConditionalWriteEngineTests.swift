// The engine's side of conditional writes: modSeqs follow every store, a transaction's dry run leaves them as they
// were when it fails, conditions compare as JSON, and snapshots keep them.
import ObjectGraph
import Testing

struct ConditionalWriteEngineTests {
    @Test func modSeqsFollowStoresAndFailedTransactionsLeaveThemAlone() throws {
        let graph = Graph()
        try graph.set("a", to: 1)
        try graph.set("b", to: 2)
        #expect(try graph.meta("a").modSeq == 1)
        #expect(try graph.meta("b").modSeq == 2)
        #expect(try graph.meta("never").modSeq == nil)
        // The dry run writes `a` before op 1 fails: its value and modSeq are put back.
        #expect(throws: TransactionError.self) {
            try graph.transaction([.set(try KeyPath(parsing: "a"), 10), .conditional(.modSeq(1), .set(try KeyPath(parsing: "b"), 20))])
        }
        #expect(try graph.meta("a").value == 1 && graph.meta("a").modSeq == 1)
        #expect(graph.seq == 2)
        // A condition on a key an earlier op wrote sees that write.
        try graph.transaction([.set(try KeyPath(parsing: "a"), 5), .conditional(.value(5.0), .set(try KeyPath(parsing: "a"), 6))])
        #expect(try graph.meta("a").value == 6 && graph.meta("a").modSeq == 3)
    }

    @Test func conditionsCompareAsJSONAndFailWithTheCurrentState() throws {
        let graph = Graph()
        try graph.set("person", to: .record(Record(["name": "Ada", "tags": ["x", 1]])))
        let current = try graph.get("person")
        // What `get` returned (with its $id) is equal to the same members in any order, without ids.
        try graph.set("person.name", to: "Ada", if: .value(.string("Ada")))
        try graph.set("other", to: 1, if: .absent)
        #expect(throws: GraphError.conditionFailed(path: "other", value: 1, modSeq: 3)) {
            try graph.set("other", to: 2, if: .absent)
        }
        guard case .record(let record) = current else { return }
        let reordered = Record(keys: record.keys.reversed(), values: record.values.reversed())
        try graph.set("person", to: .record(Record(["name": "Grace"])), if: .value(.record(reordered)))
        #expect(try graph.get("person.name") == "Grace")
    }

    @Test func snapshotsKeepModSeqs() throws {
        let graph = Graph()
        try graph.set("a", to: 1)
        try graph.set("b", to: 2)
        try graph.set("a", to: 3)
        let restored = try Graph(model: .open, snapshot: graph.makeSnapshot())
        #expect(try restored.meta("a").modSeq == 3)
        #expect(try restored.meta("b").modSeq == 2)
    }
}
