import ObjectGraph
import Testing

struct KeyPathTests {
    @Test func parsesDottedKeys() throws {
        let path = try KeyPath(parsing: "person.address.city")
        #expect(path.origin == .root)
        #expect(path.keys == ["person", "address", "city"])
        #expect(path.description == "person.address.city")
    }

    @Test func emptyTextIsTheRoot() throws {
        let path = try KeyPath(parsing: "")
        #expect(path.keys.isEmpty)
        #expect(path.origin == .root)
    }

    @Test func dollarIdStartsAtAnObject() throws {
        let path = try KeyPath(parsing: "$42.salary")
        #expect(path.origin == 42)
        #expect(path.keys == ["salary"])
        #expect(path.description == "$42.salary")
        #expect(try KeyPath(parsing: "$7").description == "$7")
    }

    @Test("malformed paths are rejected", arguments: ["a..b", ".a", "a.", "a.$1", "$x.a", "$-1", "$", "."])
    func rejects(_ text: String) {
        #expect(throws: GraphError.self) { try KeyPath(parsing: text) }
    }
}
