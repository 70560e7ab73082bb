import ObjectGraph
import TestSupport
import Testing

/// The seeds' KVO semantics: options, prior/after, initial, key paths through relationships, ordering, removal.
struct ObservationTests {
    static let allOptionSets: [ObservationOptions] = (0..<16).map { ObservationOptions(rawValue: UInt8($0)) }

    @Test("a notification carries exactly what its options ask for", arguments: ObservationTests.allOptionSets)
    func optionsShapeTheNotification(_ options: ObservationOptions) throws {
        let graph = Graph()
        try graph.set(KeyPath(parsing: "account.openingBalance"), to: 100.0)
        let recorder = Recorder()
        try recorder.observe(graph, "account.openingBalance", options)
        if options.contains(.initial) {
            #expect(recorder.log.count == 1)
            let initial = recorder.log[0]
            #expect(initial.isInitial && !initial.isPrior)
            #expect(initial.new == (options.contains(.new) ? .double(100) : nil))
            #expect(initial.old == nil, "an initial notification never carries old")
            #expect(initial.seq == 1)
        } else {
            #expect(recorder.log.isEmpty)
        }
        recorder.clear()
        let seq = try graph.set(KeyPath(parsing: "account.openingBalance"), to: 250.0).seq
        let expectedCount = options.contains(.prior) ? 2 : 1
        #expect(recorder.log.count == expectedCount)
        if options.contains(.prior) {
            let prior = recorder.log[0]
            #expect(prior.isPrior)
            #expect(prior.new == nil, "a prior notification never carries new")
            #expect(prior.old == (options.contains(.old) ? .double(100) : nil))
            #expect(prior.seq == seq)
        }
        let after = recorder.log[expectedCount - 1]
        #expect(!after.isPrior && !after.isInitial)
        #expect(after.kind == .setting)
        #expect(after.new == (options.contains(.new) ? .double(250) : nil))
        #expect(after.old == (options.contains(.old) ? .double(100) : nil))
        #expect(after.seq == seq)
    }

    /// The bracket reads a path reached only as its own last key from that key (old) and takes the new value from
    /// the set; every other path is evaluated. Both must agree with what `get` reads, whatever the spelling of the
    /// path, with `prior`, and when the set key is a route rather than a last key.
    @Test func oneKeyOnSeveralPathsGetsWhatEachPathReads() throws {
        let graph = Graph()
        try graph.set("a.b", to: 1)
        guard case .object(let id) = try graph.value(at: KeyPath(parsing: "a")) else {
            Issue.record("a is not an object")
            return
        }
        let recorder = Recorder()
        let all: ObservationOptions = [.new, .old, .prior]
        try recorder.observe(graph, "a.b", all, name: "ab")
        try recorder.observe(graph, "$\(id).b", all, name: "idb")
        try recorder.observe(graph, "a.b.c", all, name: "abc")
        try graph.set("a.b", to: 2)  // three paths: two reach `b` as their last key, one goes through it
        #expect(recorder.events == ["ab:prior", "idb:prior", "abc:prior", "abc:after", "idb:after", "ab:after"])
        #expect(recorder.log.filter { !$0.isPrior }.map(\.new) == [.null, .int(2), .int(2)])
        #expect(recorder.log.filter { !$0.isPrior }.map(\.old) == [.null, .int(1), .int(1)])
        recorder.clear()
        // `a.b` becomes an object: `a.b.c` re-targets through it (a route), the others see a record.
        try graph.set("a.b", to: .record(Record(keys: ["c"], values: [.string("x")])))
        try graph.set("a.b.c", to: "y")
        let afters = recorder.log.filter { !$0.isPrior }
        #expect(afters.count == 4)
        #expect(afters[0].new == .string("x") && afters[0].old == .null)
        #expect(afters[3].new == .string("y") && afters[3].old == .string("x"))
        recorder.clear()
        // One path, with prior, set through the plain path: prior (old only) then after.
        let single = Graph()
        try single.set("k", to: 1)
        try recorder.observe(single, "k", all, name: "k")
        try single.set("k", to: 2)
        #expect(recorder.events == ["k:prior", "k:after"])
        #expect(recorder.log[0].old == .int(1) && recorder.log[0].new == nil)
        #expect(recorder.log[1].old == .int(1) && recorder.log[1].new == .int(2))
        #expect(recorder.log[0].payloadID != recorder.log[1].payloadID && recorder.log[0].seq == recorder.log[1].seq)
        recorder.clear()
        // A plain set of a key the one observed path goes through (a route): the path re-targets and reads null.
        try single.set("o.x", to: 1)
        try recorder.observe(single, "o.x", all, name: "ox")
        try single.set("o", to: 5)
        #expect(recorder.events == ["ox:prior", "ox:after"])
        #expect(recorder.log[1].old == .int(1) && recorder.log[1].new == .null)
        try single.set("o", to: .record(Record(keys: ["x"], values: [.int(3)])))
        #expect(recorder.log.last?.new == .int(3) && recorder.log.last?.old == .null)
        try single.set("o.x", to: 4)  // the new route's last key: reached directly again
        #expect(recorder.log.last?.new == .int(4) && recorder.log.last?.old == .int(3))
    }

    @Test func settingAnEqualValueStillNotifies() throws {
        let graph = Graph()
        try graph.set(KeyPath(parsing: "name"), to: "Savings")
        let recorder = Recorder()
        try recorder.observe(graph, "name", [.new, .old])
        try graph.set(KeyPath(parsing: "name"), to: "Savings")
        #expect(recorder.log.count == 1)
        #expect(recorder.log[0].old == "Savings")
        #expect(recorder.log[0].new == "Savings")
    }

    @Test func missingValuesAreNull() throws {
        let graph = Graph()
        let recorder = Recorder()
        try recorder.observe(graph, "person.address.city", [.new, .old, .initial])
        #expect(recorder.log[0].new == .null)
        try graph.set(KeyPath(parsing: "person.address.city"), to: "Paris")
        #expect(recorder.log[1].old == .null)
        #expect(recorder.log[1].new == "Paris")
    }

    @Test func creatingAnIntermediateIsAChangeOfTheKeyThatHoldsIt() throws {
        let graph = Graph()
        let recorder = Recorder()
        try recorder.observe(graph, "person", [.new, .old])
        try recorder.observe(graph, "person.address.city", [.new])
        try graph.set(KeyPath(parsing: "person.address.city"), to: "Oslo")
        #expect(recorder.events == ["person.address.city:after", "person:after"])
        guard case .record(let person) = recorder.log[1].new else {
            Issue.record("new person is not a snapshot")
            return
        }
        #expect(person.keys == ["address"])
        #expect(recorder.log[1].old == .null)
        #expect(recorder.log[0].new == "Oslo")
    }

    @Test func keyPathRetargetsWhenAnIntermediateIsReplaced() throws {
        let graph = Graph()
        try graph.set(KeyPath(parsing: "person.address.city"), to: "Lisbon")
        let oldAddress = try graph.value(at: KeyPath(parsing: "person.address"))
        let recorder = Recorder()
        try recorder.observe(graph, "person.address.city", [.new, .old, .prior])
        try graph.set(KeyPath(parsing: "person.address"), to: .record(Record(["city": "Porto"])))
        #expect(recorder.log.map(\.old) == [.string("Lisbon"), .string("Lisbon")])
        #expect(recorder.log.last?.new == "Porto")
        recorder.clear()

        // The old address is no longer reachable through the path: changing it notifies nobody.
        guard case .object(let oldID) = oldAddress else {
            Issue.record("no old address")
            return
        }
        try graph.set(KeyPath(parsing: "$\(oldID).city"), to: "Faro")
        #expect(recorder.log.isEmpty)

        // The new one is observed.
        try graph.set(KeyPath(parsing: "person.address.city"), to: "Braga")
        #expect(recorder.log.map(\.new) == [nil, .string("Braga")])

        // A null intermediate reads as null, and the path comes back when it is set again.
        try graph.set(KeyPath(parsing: "person"), to: .null)
        #expect(recorder.log.last?.old == "Braga")
        #expect(recorder.log.last?.new == .null)
        try graph.set(KeyPath(parsing: "person.address.city"), to: "Evora")
        #expect(recorder.log.last?.new == "Evora")
        #expect(recorder.log.last?.old == .null)
    }

    @Test func severalObserversNestLikeBrackets() throws {
        let graph = Graph()
        let recorder = Recorder()
        try recorder.observe(graph, "balance", [.prior], name: "A")
        try recorder.observe(graph, "balance", [.prior, .new], name: "B")
        try recorder.observe(graph, "balance", [.new], name: "C")
        try recorder.observe(graph, "balance", [.prior], name: "D")
        try graph.set(KeyPath(parsing: "balance"), to: 1)
        #expect(recorder.events == ["A:prior", "B:prior", "D:prior", "D:after", "C:after", "B:after", "A:after"])
    }

    @Test func observersOfDifferentPathsShareOneBracket() throws {
        let graph = Graph()
        try graph.set(KeyPath(parsing: "person.name"), to: "Ada")
        guard case .object(let personID) = try graph.value(at: KeyPath(parsing: "person")) else {
            Issue.record("no person")
            return
        }
        let recorder = Recorder()
        try recorder.observe(graph, "person.name", [.prior], name: "A")
        try recorder.observe(graph, "$\(personID).name", [.prior], name: "B")
        try recorder.observe(graph, "person.name", [.prior], name: "C")
        try graph.set(KeyPath(parsing: "person.name"), to: "Grace")
        #expect(recorder.events == ["A:prior", "B:prior", "C:prior", "C:after", "B:after", "A:after"])
    }

    @Test func removedObserverIsNotNotified() throws {
        let graph = Graph()
        let recorder = Recorder()
        let id = try recorder.observe(graph, "x", [.new])
        try graph.set(KeyPath(parsing: "x"), to: 1)
        try graph.removeObservation(id)
        try graph.set(KeyPath(parsing: "x"), to: 2)
        #expect(recorder.log.count == 1)
        #expect(graph.observationCount == 0)
        #expect(throws: GraphError.unknownObservation(id)) { try graph.removeObservation(id) }
    }

    @Test func manyObserversOfOnePathRemovedInAnyOrderLeaveTheOthersInOrder() throws {
        // Removal keeps removed observers in the path's list until they outnumber the live ones: whatever is left
        // must still be notified exactly, in subscription order (prior) and in reverse (after).
        let graph = Graph()
        let recorder = Recorder()
        var ids: [ObservationID] = []
        for index in 0..<200 { ids.append(try recorder.observe(graph, "x", [.prior], name: "o\(index)")) }
        var random = SeededRandom(seed: 23)
        var removed = Set<ObservationID>()
        for id in ids.shuffled(using: &random).prefix(180) {
            try graph.removeObservation(id)
            removed.insert(id)
            #expect(graph.observation(id) == nil)
        }
        let kept = ids.filter { !removed.contains($0) }
        try recorder.observe(graph, "x", [.prior], name: "late")
        try graph.set("x", to: 1)
        let names = kept.map { recorder.names[$0] ?? "?" } + ["late"]
        #expect(recorder.events == names.map { "\($0):prior" } + names.reversed().map { "\($0):after" })
        #expect(graph.observationCount == kept.count + 1)
        for id in removed.prefix(3) {
            #expect(throws: GraphError.unknownObservation(id)) { try graph.removeObservation(id) }
        }
        for id in kept { try graph.removeObservation(id) }
        #expect(graph.observationCount == 1)
    }

    @Test func removalInsideARoundStopsItAtOnce() throws {
        let graph = Graph()
        var log: [String] = []
        var secondID: ObservationID = 0
        _ = try graph.addObservation(KeyPath(parsing: "x"), options: [.prior]) { change in
            log.append("first:\(change.isPrior)")
            if change.isPrior { try? graph.removeObservation(secondID) }
        }
        secondID = try graph.addObservation(KeyPath(parsing: "x"), options: [.prior]) { change in
            log.append("second:\(change.isPrior)")
        }.id
        try graph.set(KeyPath(parsing: "x"), to: 1)
        #expect(log == ["first:true", "first:false"])
    }

    @Test func removalInsideAnAfterRoundStopsItAtOnce() throws {
        // Notified in reverse order: the later observer runs first and removes the earlier one.
        let graph = Graph()
        var log: [String] = []
        var firstID: ObservationID = 0
        firstID = try graph.addObservation(KeyPath(parsing: "a.x"), options: [.new, .old]) { change in
            log.append("first:\(change.new ?? .null)")
        }.id
        _ = try graph.addObservation(KeyPath(parsing: "a.x"), options: [.new]) { change in
            log.append("second:\(change.new ?? .null)")
            if change.new == 2 { try? graph.removeObservation(firstID) }
        }
        try graph.set(KeyPath(parsing: "a.x"), to: 1)
        try graph.set(KeyPath(parsing: "a.x"), to: 2)
        try graph.set(KeyPath(parsing: "a.x"), to: 3)
        #expect(log == ["second:int(1)", "first:int(1)", "second:int(2)", "second:int(3)"])
    }

    @Test func repeatedSetsOfAnObservedKeyCarryEachOldAndNewValue() throws {
        let graph = Graph()
        try graph.set(KeyPath(parsing: "a.x"), to: [1, 2])
        let recorder = Recorder()
        try recorder.observe(graph, "a.x", [.new, .old], name: "first")
        try recorder.observe(graph, "a.x", [.old], name: "second")
        var seqs: [UInt64] = []
        for value: Value in [1, "two", 3.5, .null, true] {
            seqs.append(try graph.set(KeyPath(parsing: "a.x"), to: value).seq)
        }
        #expect(recorder.events == Array(repeating: ["second:after", "first:after"], count: 5).flatMap { $0 })
        let first = recorder.log.enumerated().filter { $0.offset % 2 == 1 }.map(\.element)
        #expect(first.map(\.old) == [[1, 2], 1, "two", 3.5, .null])
        #expect(first.map(\.new) == [1, "two", 3.5, .null, true])
        #expect(first.map(\.seq) == seqs)
        #expect(recorder.log[0].new == nil, "an observer without new gets none")
        #expect(recorder.log[0].old == [1, 2])
        #expect(Set(recorder.log.map(\.payloadID)).count == 5, "one payload per change, shared by its observers")
    }

    @Test func anOpenClassThatDoesNotNotifyAutomaticallyIsSilentForUndeclaredKeys() throws {
        let manual = ObjectClass(name: "Manual", isOpen: true, automaticallyNotifies: { key in key != "quiet" })
        let graph = Graph(model: try Model(root: manual, classes: []))
        let recorder = Recorder()
        try recorder.observe(graph, "quiet", [.new, .old], name: "quiet")
        try recorder.observe(graph, "loud", [.new], name: "loud")
        try graph.set("quiet", to: 1)
        try graph.set("quiet", to: 2)
        try graph.set("loud", to: 1)
        #expect(recorder.events == ["loud:after"])
        #expect(try graph.get("quiet") == 2)
    }

    @Test func aKeySetUnobservedIsNotifiedOnceObserved() throws {
        // Sets of `x` while only `y` is observed, then `x` observed: its next set notifies (nothing stale about
        // which keys are observed survives a subscription or a removal).
        let graph = Graph()
        let recorder = Recorder()
        try recorder.observe(graph, "y", [.new], name: "y")
        try graph.set("x", to: 1)
        try graph.set("x", to: 2)
        let id = try recorder.observe(graph, "x", [.new, .old], name: "x")
        try graph.set("x", to: 3)
        try graph.removeObservation(id)
        try graph.set("x", to: 4)
        try recorder.observe(graph, "x", [.new], name: "x again")
        try graph.set("x", to: 5)
        #expect(recorder.events == ["x:after", "x again:after"])
        #expect(recorder.log[0].old == 2 && recorder.log[0].new == 3)
        #expect(recorder.log[1].new == 5)
    }

    @Test func unrelatedChangesNotifyNobody() throws {
        let graph = Graph()
        let recorder = Recorder()
        try graph.set(KeyPath(parsing: "person.name"), to: "Ada")
        try recorder.observe(graph, "person.name", [.new])
        try graph.set(KeyPath(parsing: "other"), to: 1)
        try graph.set(KeyPath(parsing: "person.age"), to: 30)
        #expect(recorder.log.isEmpty)
    }

    @Test func observingAnUnknownObjectFails() {
        let graph = Graph()
        #expect(throws: GraphError.undefinedKey(path: "$77")) {
            try graph.addObservation(KeyPath(parsing: "$77.x"), options: [.new]) { _ in }
        }
    }

    @Test func observedOriginSurvivesGarbageCollection() throws {
        let graph = Graph()
        try graph.set(KeyPath(parsing: "tmp.v"), to: 1)
        guard case .object(let id) = try graph.value(at: KeyPath(parsing: "tmp")) else {
            Issue.record("no object")
            return
        }
        let recorder = Recorder()
        try recorder.observe(graph, "$\(id).v", [.new])
        try graph.set(KeyPath(parsing: "tmp"), to: .null)
        graph.collectGarbage()
        try graph.set(KeyPath(parsing: "$\(id).v"), to: 2)
        #expect(recorder.log.last?.new == 2)
    }

    @Test func equalPayloadsShareAPayloadID() throws {
        let graph = Graph()
        let recorder = Recorder()
        try recorder.observe(graph, "x", [.new])
        try recorder.observe(graph, "x", [.new, .old])
        try graph.set(KeyPath(parsing: "x"), to: 1)
        #expect(recorder.log.count == 2)
        #expect(recorder.log[0].payloadID == recorder.log[1].payloadID)
        try graph.set(KeyPath(parsing: "x"), to: 2)
        #expect(recorder.log[2].payloadID != recorder.log[0].payloadID)
    }
}
