// Tokens without a socket: the token file format, constant-time comparison, and which token grants what.
@testable import KVOServer
import Testing

struct AccessControlTests {
    @Test func aTokenFileListsTokensWithTheirAccess() throws {
        let text = """
            # kvod tokens
            alpha read-write

              beta\tread-only\r
            # the end
            """
        let tokens = try AccessControl.parseTokenFile(text, fileName: "tokens")
        #expect(tokens == [AccessToken(secret: "alpha", access: .readWrite), AccessToken(secret: "beta", access: .readOnly)])
    }

    @Test(
        "bad token files name the line",
        arguments: [
            ("alpha\n", "tokens:1: expected 'TOKEN read-write' or 'TOKEN read-only', optionally followed by PATTERN,PATTERN,..."),
            ("# only\n\nalpha write\n", "tokens:3: unknown access 'write' (expected read-write or read-only)"),
            ("a read-only\nb read-write x y\n", "tokens:2: expected 'TOKEN read-write' or 'TOKEN read-only', optionally followed by PATTERN,PATTERN,..."),
            ("a read-only a..b\n", "tokens:1: bad key-path pattern 'a..b': empty key"),
            ("a read-only a,,b\n", "tokens:1: bad key-path pattern '': empty key"),
            ("a read-only pe*\n", "tokens:1: bad key-path pattern 'pe*': '*' and '**' must be whole keys"),
            ("a read-only $1.x\n", "tokens:1: bad key-path pattern '$1.x': patterns start at the root, not at an object id"),
            ("a read-only\na read-write\n", "tokens:2: the same token appears twice"),
            ("# nothing\n\n", "tokens: no token in the file"),
        ])
    func badTokenFiles(text: String, message: String) {
        #expect(throws: TokenFileError.self) { try AccessControl.parseTokenFile(text, fileName: "tokens") }
        do {
            _ = try AccessControl.parseTokenFile(text, fileName: "tokens")
        } catch {
            #expect(error.description == message)
        }
    }

    @Test func accessIsFoundOnlyForAnExactToken() {
        let control = AccessControl(tokens: [
            AccessToken(secret: "reader-token", access: .readOnly), AccessToken(secret: "writer-token", access: .readWrite),
        ])
        #expect(control.isEnabled)
        #expect(control.access(for: "reader-token") == .readOnly)
        #expect(control.access(for: "writer-token") == .readWrite)
        for wrong in ["", "reader", "reader-token ", "reader-tokenx", "Reader-token", "writer-tokeN", "w"] {
            #expect(control.access(for: wrong) == nil, "\(wrong)")
        }
        #expect(!AccessControl().isEnabled)
        #expect(AccessControl().access(for: "anything") == nil)
    }

    @Test func constantTimeEqualityIsEquality() {
        let samples: [[UInt8]] = [[], [0], [0, 0], [1], [1, 2, 3], [1, 2, 4], [1, 2], Array("secret".utf8)]
        for left in samples {
            for right in samples {
                #expect(AccessControl.constantTimeEquals(left, right) == (left == right), "\(left) vs \(right)")
            }
        }
    }

    @Test func readOnlyTokensMayOnlyRead() {
        for method in ["get", "subscribe", "unsubscribe", "describe", "observers", "validate", "ping", "hello", "stats"] {
            #expect(AccessControl.readOnlyMethods.contains(method))
        }
        for method in ["set", "insert", "remove", "replace", "union", "minus", "intersect", "setMembers", "transaction"] {
            #expect(!AccessControl.readOnlyMethods.contains(method))
        }
    }

    @Test func restrictedTokensListTheirPatterns() throws {
        let tokens = try AccessControl.parseTokenFile("w read-write person.**,department.employees\nr read-only\n", fileName: "t")
        #expect(tokens[0].paths?.map(\.description) == ["person.**", "department.employees"])
        #expect(tokens[1].paths == nil)
        #expect(AccessControl(tokens: tokens).token(for: "w")?.paths?.count == 2)
    }

    @Test(
        "patterns grant what they match and everything beneath",
        arguments: [
            ("person.**", "person", true), ("person.**", "person.address.city", true), ("person.**", "people", false),
            ("person", "person.name", true), ("person", "", false), ("department.employees", "department", false),
            ("department.employees", "department.employees.@count", true), ("department.employees", "department.tags", false),
            ("users.*.name", "users.ada.name", true), ("users.*.name", "users.ada.email", false), ("users.*.name", "users", false),
            ("users.*.name", "users.ada", false), ("a.**.z", "a.z", true), ("a.**.z", "a.b.c.z", true), ("a.**.z", "a.b.c", false),
            ("**", "", true), ("**", "anything.at.all", true), ("*", "", false), ("*", "x.y", true),
        ])
    func patternGrants(pattern: String, path: String, granted: Bool) throws {
        let keys = path.isEmpty ? [] : path.split(separator: ".").map(String.init)
        #expect(try PathPattern(parsing: pattern).grants(keys) == granted)
    }
}
