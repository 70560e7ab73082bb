import ObjectGraph
import Testing

/// Typed classes: defaults, undefined and read-only keys, validation and coercion, null policies, notification
/// policies, side effects, manual notification, and the Swift API's observation tokens.
struct ModelTests {
    @Test func defaultsCreateObjectsAndValues() throws {
        let graph = try SeedModel.makeGraph()
        #expect(try graph.get("labColor.lComponent") == 53.0)
        #expect(try graph.get("person.address.city") == "")
        guard case .record(let person) = try graph.get("person") else {
            Issue.record("person is not an object")
            return
        }
        #expect(person.keys == ["firstName", "lastName", "address"])
    }

    @Test func undefinedKeysOnTypedClassesAreErrors() throws {
        let graph = try SeedModel.makeGraph()
        #expect(throws: GraphError.undefinedKey(path: "labColor.nope")) { try graph.get("labColor.nope") }
        #expect(throws: GraphError.undefinedKey(path: "labColor.nope")) { try graph.set("labColor.nope", to: 1) }
        #expect(throws: GraphError.undefinedKey(path: "labColor.nope")) {
            try graph.addObservation(KeyPath(parsing: "labColor.nope"), options: [.new]) { _ in }
        }
        #expect(throws: GraphError.undefinedKey(path: "person.address.zip")) {
            try graph.set("person.address", to: .record(Record(["zip": "1000"])))
        }
        // The root is open: any other key may be set.
        try graph.set("anything.goes", to: 1)
        #expect(graph.seq == 1)
    }

    @Test func computedKeysAreReadOnly() throws {
        let graph = try SeedModel.makeGraph()
        #expect(throws: GraphError.readOnly(path: "labColor.color")) { try graph.set("labColor.color", to: "#FFFFFF") }
        #expect(throws: GraphError.readOnly(path: "person.fullName")) { try graph.set("person.fullName", to: "x") }
        #expect(graph.seq == 0)
    }

    @Test func coercionAndRejection() throws {
        let graph = try SeedModel.makeGraph()
        #expect(try graph.set("labColor.lComponent", to: 60).storedValue == 60.0)
        #expect(try graph.get("labColor.lComponent") == 60.0)
        #expect(try graph.set("contact.age", to: "42").storedValue == 42)
        #expect(try graph.set("contact.age", to: 43.0).storedValue == 43)
        #expect(try graph.set("contact.age", to: 44).storedValue == nil, "stored as given")
        #expect(try graph.set("contact.name", to: "  Ada  ").storedValue == "Ada")
        #expect(try graph.get("contact.name") == "Ada")
        let rejected: [(String, Value)] = [
            ("contact.age", 4.5), ("contact.age", "forty"), ("contact.age", -1), ("contact.age", 151),
            ("contact.name", "a very long name"), ("contact.email", "not-an-email"), ("contact.level", "medium"),
            ("contact.nickname", "Admin"), ("labColor.lComponent", "dark"), ("labColor.lComponent", true),
            ("contact.name", 5),
        ]
        for (path, value) in rejected {
            #expect(throws: GraphError.self, "\(path) = \(value)") { try graph.set(path, to: value) }
            do {
                try graph.set(path, to: value)
            } catch {
                guard case .validationFailed(let errorPath, let reason) = error else {
                    Issue.record("\(path): \(error)")
                    continue
                }
                #expect(errorPath == path)
                #expect(!reason.isEmpty)
            }
        }
        #expect(try graph.set("contact.email", to: "ada@example.org").storedValue == nil)
        #expect(try graph.validate(KeyPath(parsing: "contact.age"), "7") == 7)
        let seq = graph.seq
        #expect(throws: GraphError.self) { try graph.validate(KeyPath(parsing: "contact.age"), "x") }
        #expect(graph.seq == seq, "validate stores nothing")
    }

    @Test func nullPolicies() throws {
        let graph = try SeedModel.makeGraph()
        #expect(try graph.set("labColor.lComponent", to: .null).storedValue == 0.0)
        #expect(try graph.get("labColor.lComponent") == 0.0)
        #expect(throws: GraphError.nullNotAllowed(path: "contact.score")) { try graph.set("contact.score", to: .null) }
        try graph.set("contact.name", to: .null)
        #expect(try graph.get("contact.name") == .null)
    }

    @Test func onChangePolicyWithANestedSideEffect() throws {
        let graph = try SeedModel.makeGraph()
        let recorder = Recorder()
        try recorder.observe(graph, "account.openingBalance", [.prior, .new, .old], name: "balance")
        try recorder.observe(graph, "account.itemChanged", [.prior, .new, .old], name: "items")
        try graph.set("account.openingBalance", to: 100.0)
        #expect(recorder.events == ["balance:prior", "items:prior", "items:after", "balance:after"])
        #expect(recorder.log[2].old == 0 && recorder.log[2].new == 1)
        recorder.clear()
        // Unchanged: no notification, no increment (the seeds' Listing 4).
        let seq = try graph.set("account.openingBalance", to: 100).seq
        #expect(recorder.log.isEmpty)
        #expect(try graph.get("account.itemChanged") == 1)
        #expect(seq == graph.seq, "a successful set still takes a seq")
        try graph.set("account.openingBalance", to: 150.0)
        #expect(try graph.get("account.itemChanged") == 2)
        #expect(recorder.log.count == 4)
    }

    @Test func manualNotificationNestsLikeListingFive() throws {
        let manual = ObjectClass(
            name: "Manual", isOpen: false,
            properties: [
                .stored("balance", StoredProperty(type: .double, defaultValue: 0.0)),
                .stored("items", StoredProperty(type: .int, defaultValue: 0)),
            ],
            automaticallyNotifies: { key in key != "balance" })
        let graph = Graph(model: try Model(root: manual, classes: []))
        let recorder = Recorder()
        try recorder.observe(graph, "balance", [.prior, .new, .old], name: "balance")
        try recorder.observe(graph, "items", [.prior, .new], name: "items")
        try graph.set("balance", to: 5.0)
        #expect(recorder.log.isEmpty, "automaticallyNotifies returned false: a plain set is silent")
        graph.willChangeValue(forKey: "balance", of: .root)
        graph.willChangeValue(forKey: "items", of: .root)
        try graph.setPrimitiveValue(10.0, forKey: "balance", of: .root)
        try graph.setPrimitiveValue(1, forKey: "items", of: .root)
        graph.didChangeValue(forKey: "items", of: .root)
        graph.didChangeValue(forKey: "balance", of: .root)
        #expect(recorder.events == ["balance:prior", "items:prior", "items:after", "balance:after"])
        #expect(recorder.log[0].old == 5.0)
        #expect(recorder.log[3].new == 10.0)
        #expect(Set(recorder.log.map(\.seq)) == [graph.seq])
    }

    @Test func recordsAtTypedKeysBecomeObjectsOfTheDeclaredClass() throws {
        let graph = try SeedModel.makeGraph()
        try graph.set("person.address", to: .record(Record(["city": "Oslo"])))
        #expect(try graph.objectClass(at: KeyPath(parsing: "person.address"))?.name == "Address")
        #expect(try graph.get("person.address.street") == "", "defaults fill the keys the record leaves out")
        try graph.set("extra.address", to: .record(Record(["zip": 1])))
        #expect(try graph.objectClass(at: KeyPath(parsing: "extra.address"))?.name == "Object")
        guard case .object(let personID) = try graph.value(at: KeyPath(parsing: "person")) else { return }
        #expect(throws: GraphError.self) { try graph.set("person.address", to: .object(personID)) }
    }

    @Test func observationTokenEndsTheObservationWhenReleased() throws {
        let graph = try SeedModel.makeGraph()
        var seen: [Value?] = []
        var token: ObservationToken? = try graph.observe("person.fullName", options: [.initial, .new]) { seen.append($0.new) }
        #expect(seen == [.string(" ")])
        try graph.set("person.firstName", to: "Grace")
        #expect(seen.last == "Grace ")
        #expect(graph.observationCount == 1)
        _ = token
        token = nil
        #expect(graph.observationCount == 0)
        try graph.set("person.firstName", to: "Ada")
        #expect(seen.count == 2)
    }
}
