import ObjectGraph
import Testing

/// Dependent keys as Apple's KVO sends them: each observer once per change, priors in subscription order, afters in
/// reverse, old values read before the change, re-targeting through to-one relationships.
struct DependentKeyTests {
    static let chain = ["lComponent", "redComponent", "greenComponent", "blueComponent", "color"]

    @Test func changingLNotifiesTheWholeChainOnceEachAsBrackets() throws {
        let graph = try SeedModel.makeGraph()
        let recorder = Recorder()
        for key in Self.chain { try recorder.observe(graph, "labColor.\(key)", [.prior, .old, .new], name: key) }
        try recorder.observe(graph, "labColor.aComponent", [.prior], name: "aComponent")
        let oldColor = try graph.get("labColor.color")
        let oldRed = try graph.get("labColor.redComponent")
        try graph.set("labColor.lComponent", to: 80.0)
        #expect(recorder.events == [
            "lComponent:prior", "redComponent:prior", "greenComponent:prior", "blueComponent:prior", "color:prior",
            "color:after", "blueComponent:after", "greenComponent:after", "redComponent:after", "lComponent:after",
        ])
        let colorAfter = recorder.log[5]
        #expect(colorAfter.old == oldColor)
        #expect(colorAfter.new == (try graph.get("labColor.color")))
        #expect(colorAfter.old != colorAfter.new)
        #expect(recorder.log[1].old == oldRed, "old values are read before the change")
        #expect(recorder.log[1].new == nil, "a prior notification never carries new")
        #expect(Set(recorder.log.map(\.seq)).count == 1)
    }

    @Test func changingAReachesOnlyItsDependents() throws {
        let graph = try SeedModel.makeGraph()
        let recorder = Recorder()
        for key in Self.chain { try recorder.observe(graph, "labColor.\(key)", [.new], name: key) }
        try graph.set("labColor.aComponent", to: 20.0)
        #expect(recorder.events == ["color:after", "greenComponent:after"])
    }

    @Test("every option combination on a computed key", arguments: ObservationTests.allOptionSets)
    func optionsOnComputedKeys(_ options: ObservationOptions) throws {
        let graph = try SeedModel.makeGraph()
        let recorder = Recorder()
        let before = try graph.get("labColor.color")
        try recorder.observe(graph, "labColor.color", options)
        #expect(recorder.log.count == (options.contains(.initial) ? 1 : 0))
        if options.contains(.initial) {
            #expect(recorder.log[0].new == (options.contains(.new) ? before : nil))
        }
        recorder.clear()
        try graph.set("labColor.lComponent", to: 10.0)
        let after = try graph.get("labColor.color")
        #expect(recorder.log.count == (options.contains(.prior) ? 2 : 1))
        let last = recorder.log.last!
        #expect(last.new == (options.contains(.new) ? after : nil))
        #expect(last.old == (options.contains(.old) ? before : nil))
    }

    @Test func fullNameFollowsBothNames() throws {
        let graph = try SeedModel.makeGraph()
        try graph.set("person.firstName", to: "Ada")
        try graph.set("person.lastName", to: "Lovelace")
        #expect(try graph.get("person.fullName") == "Ada Lovelace")
        let recorder = Recorder()
        try recorder.observe(graph, "person.fullName", [.new, .old])
        try graph.set("person.firstName", to: "Augusta")
        try graph.set("person.lastName", to: "King")
        #expect(recorder.log.map(\.new) == [.string("Augusta Lovelace"), .string("Augusta King")])
        #expect(recorder.log.map(\.old) == [.string("Ada Lovelace"), .string("Augusta Lovelace")])
    }

    @Test func dependencyThroughAToOneRelationshipRetargets() throws {
        let graph = try SeedModel.makeGraph()
        try graph.set("person.address.city", to: "Lisbon")
        let oldAddress = try graph.value(at: KeyPath(parsing: "person.address"))
        let recorder = Recorder()
        try recorder.observe(graph, "person.cityLabel", [.new, .old])
        try graph.set("person.address", to: .record(Record(["city": "Porto"])))
        #expect(recorder.log.last?.old == "City: Lisbon")
        #expect(recorder.log.last?.new == "City: Porto")
        guard case .object(let oldID) = oldAddress else { return }
        try graph.set("$\(oldID).city", to: "Faro")
        #expect(recorder.log.count == 1, "the replaced address no longer affects cityLabel")
        try graph.set("person.address.city", to: "Braga")
        #expect(recorder.log.last?.new == "City: Braga")
    }

    @Test func initialOnAComputedKeyGivesItsCurrentValue() throws {
        let graph = try SeedModel.makeGraph()
        let recorder = Recorder()
        try recorder.observe(graph, "labColor.color", [.initial, .new])
        #expect(recorder.log.first?.new == (try graph.get("labColor.color")))
        guard case .string(let hex)? = recorder.log.first?.new else {
            Issue.record("color is not a string")
            return
        }
        #expect(hex.count == 7 && hex.hasPrefix("#"))
    }

    @Test func aDependencyCycleIsRejected() {
        let looped = ObjectClass(
            name: "Loop", isOpen: false,
            properties: [
                .computed("a", dependsOn: ["b"]) { _ in .null },
                .computed("b", dependsOn: ["c"]) { _ in .null },
                .computed("c", dependsOn: ["a"]) { _ in .null },
            ])
        #expect(throws: ModelError.self) { try Model(root: looped, classes: []) }
        do {
            _ = try Model(root: looped, classes: [])
        } catch {
            #expect(error.message.contains("dependency cycle"))
        }
    }
}
