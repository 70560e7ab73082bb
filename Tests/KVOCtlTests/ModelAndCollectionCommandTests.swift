// kvoctl's model and collection commands against a live kvod on the default model: describe, observers, validate,
// insert/remove/replace, tx, and `watch --format text`.

import TestSupport
import Testing
import WireProtocol

@Suite("kvoctl model and collection commands", .serialized)
struct ModelAndCollectionCommandTests {
    @Test func describePrintsClassesReadably() throws {
        let server = try KVODProcess.start(defaultModel: true)
        defer { server.stop() }
        let all = try CLI.run(["describe"], on: server)
        #expect(all.status == 0, "\(all)")
        #expect(all.stdout.contains("class LabColor"))
        #expect(all.stdout.contains("color = format("))
        #expect(all.stdout.contains("depends on redComponent, greenComponent, blueComponent"))
        let one = try CLI.run(["describe", "account"], on: server)
        #expect(one.stdout.contains("openingBalance: double") && one.stdout.contains("notify onChange"))
        #expect(one.stdout.contains("increments [\"itemChanged\"]"))
        let json = try parseJSON(try CLI.run(["describe", "labColor", "--format", "json"], on: server).stdout)
        #expect(json["class"]?["name"] == "LabColor")
        let notAnObject = try CLI.run(["describe", "labColor.lComponent"], on: server)
        #expect(notAnObject.status == 2)
        #expect(notAnObject.stderr.contains("1005"))
    }

    @Test func observersAndValidate() throws {
        let server = try KVODProcess.start(defaultModel: true)
        defer { server.stop() }
        let watch = try CLI.start(["watch", "labColor.color", "--prior", "--new", "--count", "1"], on: server)
        try waitForSubscription(on: server, path: "labColor.color")
        let listing = try CLI.run(["observers", "labColor.color"], on: server)
        #expect(listing.status == 0)
        #expect(listing.stdout.contains("labColor.color [new,prior]"))
        #expect(try CLI.run(["validate", "contact.name", "  Ada  "], on: server).stdout == "\"Ada\"\n")
        let invalid = try CLI.run(["validate", "contact.email", "nope"], on: server)
        #expect(invalid.status == 2 && invalid.stderr.contains("1002"))
        _ = watch.terminate()
    }

    @Test func collectionCommandsAndTextWatch() throws {
        let server = try KVODProcess.start(defaultModel: true)
        defer { server.stop() }
        let watch = try CLI.start(["watch", "department.employees", "--old", "--new", "--format", "text", "--count", "3"], on: server)
        try waitForSubscription(on: server, path: "department.employees")
        #expect(try CLI.run(["insert", "department.employees", #"{"name":"Ada","salary":100}"#, #"{"name":"Grace","salary":200}"#], on: server).status == 0)
        #expect(try CLI.run(["replace", "department.employees", "--index", "1", #"{"name":"Hedy","salary":150}"#], on: server).status == 0)
        #expect(try CLI.run(["remove", "department.employees", "--index", "0"], on: server).status == 0)
        let lines = try watch.waitForExit(timeout: .seconds(10)).stdoutLines
        try #require(lines.count == 3, "\(lines)")
        #expect(lines[0].hasPrefix("seq 1 department.employees insertion at [0, 1]: new ["))
        #expect(lines[1].hasPrefix("seq 2 department.employees replacement at [1]: old ["))
        #expect(lines[2].hasPrefix("seq 3 department.employees removal at [0]: old ["))
        #expect(!lines[2].contains("new"))
        #expect(try CLI.run(["get", "department.totalSalary"], on: server).stdout == "150.0\n")
        #expect(try CLI.run(["insert", "department.tags", "ops", "core"], on: server).status == 0)
        #expect(try CLI.run(["remove", "department.tags", "--value", "ops"], on: server).status == 0)
        #expect(try CLI.run(["get", "department.tags"], on: server).stdout == "[\"core\"]\n")
        let outOfRange = try CLI.run(["remove", "department.employees", "--index", "9"], on: server)
        #expect(outOfRange.status == 2 && outOfRange.stderr.contains("1004"))
        #expect(try CLI.run(["remove", "department.employees"], on: server).status == 64)
    }

    @Test func transactionsFromStdin() throws {
        let server = try KVODProcess.start()
        defer { server.stop() }
        let ops = #"[{"method":"set","params":{"path":"a","value":1}},{"method":"insert","params":{"path":"list","value":"x"}}]"#
        let ok = try CLI.run(["tx", "-"], on: server, stdin: ops)
        #expect(ok.status == 0, "\(ok)")
        #expect(try parseJSON(ok.stdout) == .json(#"{"seq":1}"#))
        let failing = #"[{"method":"set","params":{"path":"a","value":2}},{"method":"remove","params":{"path":"list","index":5}}]"#
        let bad = try CLI.run(["tx", "-"], on: server, stdin: failing)
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("1004") && bad.stderr.contains("\"op\":1"))
        #expect(try CLI.run(["get", "a"], on: server).stdout == "1\n")
        #expect(try CLI.run(["tx", "-"], on: server, stdin: "not json").status == 64)
    }
}
