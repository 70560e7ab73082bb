// The Swift API example of README.md, run as a test; a second test checks that the README still shows exactly this
// code, so the example cannot drift from what compiles and works.
import Foundation
import ObjectGraph
import Testing

struct ReadmeExampleTests {
    @Test func theExampleRunsAsDocumented() throws {
        var printed: [String] = []
        func print(_ line: String) { printed.append(line) }
        // README-BEGIN
        let person = ObjectClass(name: "Person", isOpen: false, properties: [
            .stored("firstName", StoredProperty(type: .string, defaultValue: "")),
            .stored("lastName", StoredProperty(type: .string, defaultValue: "", rules: [.trim])),
            .computed("fullName", dependsOn: ["firstName", "lastName"]) { read in
                .string("\(read("firstName").stringValue ?? "") \(read("lastName").stringValue ?? "")")
            },
        ])
        let root = ObjectClass(name: "Root", isOpen: true, properties: [
            .stored("person", StoredProperty(type: .object("Person"), defaultValue: .record(Record()))),
        ])
        let graph = Graph(model: try Model(root: root, classes: [person]))

        // The token keeps the observation; releasing it (or `invalidate()`) removes it.
        let token = try graph.observe("person.fullName", options: [.old, .new]) { change in
            print("fullName: \(change.old?.stringValue ?? "") -> \(change.new?.stringValue ?? "")")
        }
        try graph.set("person.firstName", to: "Ada")
        try graph.set("person.lastName", to: "  Lovelace ")    // trimmed by validation
        token.invalidate()
        // README-END
        #expect(printed == ["fullName:   -> Ada ", "fullName: Ada  -> Ada Lovelace"])
    }

    @Test func theReadmeShowsThisCode() throws {
        let here = URL(fileURLWithPath: #filePath)
        let source = try String(contentsOf: here, encoding: .utf8)
        let readme = try String(
            contentsOf: here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("README.md"), encoding: .utf8)
        guard let begin = source.range(of: "// README-BEGIN\n"), let end = source.range(of: "        // README-END") else {
            Issue.record("markers missing")
            return
        }
        let block = source[begin.upperBound..<end.lowerBound].split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.hasPrefix("        ") ? String($0.dropFirst(8)) : String($0) }.joined(separator: "\n")
        #expect(readme.contains(block), "README.md must contain the example exactly:\n\(block)")
    }
}
