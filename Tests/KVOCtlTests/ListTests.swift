// `kvoctl ls`: the keys of an object (current ones with their types, then the declared ones without a value), a page
// of a to-many with the next page named on stderr, and clear errors, against a kvod on its default model.

import TestSupport
import Testing
import WireProtocol

@Suite("kvoctl ls")
struct ListTests {
    @Test func anObjectsKeysThenItsDeclaredOnes() throws {
        try withDefaultModelKVOD { server in
            let root = try CLI.run(["ls"], on: server)
            #expect(root.status == 0 && root.stdoutLines.map { $0.split(separator: " ")[0] }
                == ["labColor", "person", "account", "contact", "department"], "\(root)")
            let person = try CLI.run(["ls", "person"], on: server)
            #expect(person.stdoutLines == [
                "firstName  string", "lastName   string", "address    object", "fullName   computed",
            ], "\(person)")
            let json = try CLI.run(["ls", "person.address", "--format", "json"], on: server)
            #expect(try parseJSON(json.stdout) == .json(#"{"keys":{"street":"string","city":"string"}}"#))
        }
    }

    @Test func aPageOfAToManyAndTheNextPageOnStderr() throws {
        try withDefaultModelKVOD { server in
            let names = (0..<12).map { #"{"name":"e\#($0)","salary":\#($0)}"# }
            #expect(try CLI.run(["insert", "department.employees"] + names, on: server).status == 0)
            let page = try CLI.run(["ls", "department.employees", "--offset", "9", "--limit", "2"], on: server)
            #expect(page.status == 0, "\(page)")
            #expect(page.stdoutLines.count == 2 && page.stdoutLines[0].hasPrefix(" 9  {\"$id\":"), "\(page)")
            #expect(page.stdoutLines[1].hasSuffix(#""name":"e10","salary":10.0}"#), "\(page)")
            #expect(page.stderr == "kvoctl: 2 of 12 (9-10); the next page: --offset 11 --limit 2\n", "\(page)")
            let last = try CLI.run(["ls", "department.employees.name", "--offset", "11"], on: server)
            #expect(last.stdoutLines == [#"11  "e11""#] && last.stderr.isEmpty, "\(last)")
            let json = try CLI.run(["ls", "department.employees.salary", "--limit", "3", "--format", "json"], on: server)
            #expect(try parseJSON(json.stdout) == .json(#"{"value":[0.0,1.0,2.0],"offset":0,"count":12}"#))
            let countOnly = try CLI.run(["ls", "department.employees", "--limit", "0"], on: server)
            #expect(countOnly.stdout.isEmpty && countOnly.stderr.contains("0 of 12"), "\(countOnly)")
        }
    }

    @Test func whatCannotBeListedSaysSo() throws {
        try withDefaultModelKVOD { server in
            let scalar = try CLI.run(["ls", "labColor.lComponent"], on: server)
            #expect(scalar.status == 2 && scalar.stderr.contains("neither an object nor a collection"), "\(scalar)")
            let undeclared = try CLI.run(["ls", "person.nickname"], on: server)
            #expect(undeclared.status == 2 && undeclared.stderr.contains("error 1001"), "\(undeclared)")
            #expect(try CLI.run(["ls", "person", "--limit", "-1"], on: server).status == 64)
        }
    }
}

/// Runs `body` with a fresh kvod on its default model (Sources/kvod/default-model.json), stopped afterwards.
func withDefaultModelKVOD(_ body: (KVODProcess) throws -> Void) throws {
    let server = try KVODProcess.start(defaultModel: true)
    defer { server.stop() }
    try body(server)
}
