// Inputs found by fuzzing and probing (docs/RELIABILITY.md) that broke an engine invariant, fed to the engine
// exactly. (Cases once wrapped in `withKnownIssue` documented bugs not fixed yet; the findings are fixed now and the
// cases assert the fixes. A new unfixed finding may be wrapped the same way: it passes while the bug is
// there and fails once it is fixed, so the wrapper can be removed then.
import ObjectGraph
import Testing

struct FuzzRegressionTests {
    /// Notifications an observation received.
    final class Counter {
        var changes: [Change] = []
    }

    /// FuzzKeyPath, seeds `@count`, `x.@distinctUnionOfObjects`, `department.employees.@sum.salary` (open graph),
    /// and crash-11480977 (base64 `QNy8NGlpae+/vWkuCQ==`: a first key "@" + U+073C, a combining mark, so that
    /// `hasPrefix("@")` is false while the engine's first-byte test is true): `set` stores a key that starts with
    /// `@`, but `get` and observers read such a key as a collection operator, so the value cannot be read back and
    /// its observer is never notified.
    @Test(arguments: [
        "@count", "x.@sum", "a.b.@distinctUnionOfObjects",
        String(decoding: [0x40, 0xDC, 0xBC, 0x34, 0x69, 0x69, 0x69, 0xEF, 0xBF, 0xBD, 0x69, 0x2E, 0x09], as: UTF8.self),
    ])
    func aKeyThatLooksLikeAnOperatorIsRefusedOrReadable(_ text: String) throws {
        let graph = Graph()
        let path = try KeyPath(parsing: text)
        let counter = Counter()
        // An unknown operator on the route is refused at subscribe too (1001); the others are observable (their route
        // is missing for now, or `@count` on the root).
        let unknownOperator = text.utf8.first == UInt8(ascii: "@") && CollectionOperator(rawValue: text) == nil
        if unknownOperator {
            #expect(throws: GraphError.self) { try graph.addObservation(path, options: [.new]) { _ in } }
        } else {
            _ = try graph.addObservation(path, options: [.new, .prior]) { counter.changes.append($0) }
        }
        // Fixed: a key starting with '@' is refused by set (it could never be read back), and nothing changes.
        #expect(throws: GraphError.self) { try graph.set(path, to: 7) }
        #expect(counter.changes.isEmpty)
        #expect(graph.seq == 0)
    }

    /// Probing (a `set` with a 45,000-key path is a 90 KB request): the missing intermediates are wrapped into one
    /// nested record per key before the depth limit is checked, and releasing that value recurses once per level,
    /// which overflows the stack and kills kvod. The live twin is
    /// HostileInputTests.aSetThroughAVeryLongPathIsRefusedWithoutCrashing.
    @Test(arguments: ["set", "validate", "transaction"])
    func aSetThroughAVeryLongPathIsTooDeep(_ method: String) throws {
        let graph = Graph()
        // Fixed twice over: a path of more than KeyPath.maxKeys keys is refused when parsed...
        let text = Array(repeating: "k", count: 100_000).joined(separator: ".")
        #expect(throws: GraphError.tooDeep(path: String(text.prefix(64)) + "…", limit: KeyPath.maxKeys)) {
            try KeyPath(parsing: text)
        }
        // ... and one within it but deeper than the value depth is refused before anything is built.
        let path = try KeyPath(parsing: Array(repeating: "k", count: KeyPath.maxKeys).joined(separator: "."))
        let result = Result { () throws(GraphError) in
            switch method {
            case "set": try graph.set(path, to: 1)
            case "validate": _ = try graph.validate(path, 1)
            default:
                if case .failure(let failure) = Result(catching: { () throws(TransactionError) in try graph.transaction([.set(path, 1)]) }) {
                    throw failure.error
                }
            }
        }
        guard case .failure(.tooDeep) = result else {
            Issue.record("\(method) through \(KeyPath.maxKeys) keys: \(result), expected tooDeep")
            return
        }
        #expect(graph.seq == 0)
    }

    /// The same, short enough not to overflow: refused with `tooDeep`, nothing changes.
    @Test func aSetThroughALongPathIsTooDeep() throws {
        let graph = Graph()
        let path = try KeyPath(parsing: Array(repeating: "k", count: 200).joined(separator: "."))
        let result = Result { () throws(GraphError) in try graph.set(path, to: 1) }
        guard case .failure(.tooDeep(_, 64)) = result else {
            Issue.record("set through 200 keys: \(result), expected tooDeep with limit 64")
            return
        }
        #expect(graph.seq == 0)
        #expect(try graph.get(KeyPath(parsing: "k")) == .null)
    }
}
