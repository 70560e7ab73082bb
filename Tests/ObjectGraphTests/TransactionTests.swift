import ObjectGraph
import Testing

/// Transactions: all-or-nothing, one seq, priors for every affected key before any change (op order, then
/// subscription order), afters in reverse, each observer once per key.
struct TransactionTests {
    @Test func aTransactionIsOneBracketWithOneSeq() throws {
        let graph = Graph()
        try graph.set("a", to: 1)
        try graph.set("b", to: 1)
        let recorder = Recorder()
        try recorder.observe(graph, "b", [.prior, .old, .new], name: "B")
        try recorder.observe(graph, "a", [.prior, .old, .new], name: "A")
        let seq = try graph.transaction([
            .set(KeyPath(parsing: "a"), 2), .set(KeyPath(parsing: "b"), 2), .set(KeyPath(parsing: "a"), 3),
        ])
        #expect(seq == 3)
        // Op order first (a is touched by op 0, b by op 1), then subscription order.
        #expect(recorder.events == ["A:prior", "B:prior", "B:after", "A:after"])
        #expect(recorder.log[0].old == 1 && recorder.log[3].new == 3 && recorder.log[3].old == 1)
        #expect(Set(recorder.log.map(\.seq)) == [3])
    }

    @Test func aFailingOpChangesNothingAndNotifiesNobody() throws {
        let graph = try SeedModel.makeGraph()
        try graph.set("counter", to: 1)
        let recorder = Recorder()
        try recorder.observe(graph, "counter", [.prior, .new])
        try recorder.observe(graph, "person.address.city", [.prior, .new])
        let objects = graph.objectCount
        let seq = graph.seq
        #expect(throws: TransactionError(op: 2, error: .validationFailed(path: "contact.email", reason: "\"bad\" does not match the pattern ^[^@\\s]+@[^@\\s]+\\.[^@\\s]+$"))) {
            try graph.transaction([
                .set(KeyPath(parsing: "counter"), 2),
                .set(KeyPath(parsing: "person.address"), .record(Record(["city": "Oslo"]))),
                .set(KeyPath(parsing: "contact.email"), "bad"),
            ])
        }
        #expect(recorder.log.isEmpty)
        #expect(graph.seq == seq)
        #expect(graph.objectCount == objects)
        #expect(try graph.get("counter") == 1)
        #expect(try graph.get("person.address.city") == "")
    }

    @Test func laterOpsSeeEarlierOnes() throws {
        let graph = Graph()
        let recorder = Recorder()
        try recorder.observe(graph, "team.lead.name", [.new])
        try graph.transaction([
            .set(KeyPath(parsing: "team"), .record(Record(["members": []]))),
            .mutate(KeyPath(parsing: "team.members"), .append([.record(Record(["name": "Ada"]))])),
            .set(KeyPath(parsing: "team.lead"), .record(Record(["name": "Grace"]))),
            .set(KeyPath(parsing: "team.lead.name"), "Hedy"),
        ])
        #expect(recorder.log.count == 1)
        #expect(recorder.log[0].new == "Hedy")
        #expect(try graph.get("team.members.name") == ["Ada"])
        // The ids the dry run allocated are the ones the real run used.
        guard case .object(let lead) = try graph.value(at: KeyPath(parsing: "team.lead")) else { return }
        #expect(try graph.get("$\(lead).name") == "Hedy")
    }

    @Test func twoOpsOnOneCollectionFallBackToASettingChange() throws {
        let graph = Graph()
        try graph.set("list", to: [1, 2, 3])
        let recorder = Recorder()
        try recorder.observe(graph, "list", [.new, .old])
        try graph.transaction([
            .mutate(KeyPath(parsing: "list"), .remove(indexes: [0])),
            .mutate(KeyPath(parsing: "list"), .append([4])),
        ])
        #expect(recorder.log.count == 1)
        #expect(recorder.log[0].kind == .setting)
        #expect(recorder.log[0].old == [1, 2, 3] && recorder.log[0].new == [2, 3, 4])
    }

    @Test func oneCollectionOpKeepsItsDetail() throws {
        let graph = Graph()
        try graph.set("list", to: [1, 2, 3])
        try graph.set("other", to: 0)
        let recorder = Recorder()
        try recorder.observe(graph, "list", [.new, .old])
        try graph.transaction([.mutate(KeyPath(parsing: "list"), .remove(indexes: [1])), .set(KeyPath(parsing: "other"), 1)])
        #expect(recorder.log.first?.kind == .removal)
        #expect(recorder.log.first?.indexes == [1])
        #expect(recorder.log.first?.old == [2])
    }
}
