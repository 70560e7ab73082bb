// The model layer as JSON-RPC messages, on kvod's embedded default model (the seeds' classes), in process
// (InProcessServer.swift): dependent keys with exact ordering, validation results and errors, undefined and read-only
// keys, describe, observers. `--model` (a file served, a bad one stopping kvod) against a live kvod.
import Foundation
import TestSupport
import Testing
import WireProtocol

@MainActor
@Suite struct ModelOverWireTests {
    @Test func labColorChainOrderingAndValues() throws {
        let server = try InProcessServer(model: InProcessServer.defaultModel())
        let watcher = server.peer()
        let keys = ["lComponent", "redComponent", "greenComponent", "blueComponent", "color"]
        for (index, key) in keys.enumerated() {
            _ = try watcher.request(index + 1, "subscribe", #"{"path":"labColor.\#(key)","options":["prior","old","new"],"context":"\#(key)"}"#)
        }
        let before = try watcher.request(10, "get", #"{"path":"labColor.color"}"#)["result"]?["value"]
        let setter = server.peer()
        #expect(try setter.request(1, "set", #"{"path":"labColor.lComponent","value":80}"#)["result"] == .json(#"{"seq":1,"value":80.0}"#))
        let notes = try watcher.receive(10)
        let order = notes.map { "\($0["params"]?["context"]?.stringValue ?? "?"):\($0["params"]?["prior"] == true ? "will" : "did")" }
        #expect(order == [
            "lComponent:will", "redComponent:will", "greenComponent:will", "blueComponent:will", "color:will",
            "color:did", "blueComponent:did", "greenComponent:did", "redComponent:did", "lComponent:did",
        ])
        let after = try watcher.request(11, "get", #"{"path":"labColor.color"}"#)["result"]?["value"]
        #expect(notes[5]["params"]?["old"] == before)
        #expect(notes[5]["params"]?["new"] == after)
        #expect(before != after)
        #expect(notes.allSatisfy { $0["params"]?["seq"] == 1 })
        try watcher.expectQuiet()
    }

    @Test func fullNameAndAccountNesting() throws {
        let server = try InProcessServer(model: InProcessServer.defaultModel())
        let peer = server.peer()
        _ = try peer.request(1, "subscribe", #"{"path":"person.fullName","options":["new"]}"#)
        peer.send(Peer.requestText(2, "set", #"{"path":"person.firstName","value":"Ada"}"#))
        let messages = try peer.receive(2)
        #expect(messages[0]["params"]?["new"] == " Ada" || messages[0]["params"]?["new"] == "Ada ")
        _ = try peer.request(3, "subscribe", #"{"path":"account.openingBalance","options":["prior","new"],"context":"balance"}"#)
        _ = try peer.request(4, "subscribe", #"{"path":"account.itemChanged","options":["prior","new"],"context":"items"}"#)
        peer.send(Peer.requestText(5, "set", #"{"path":"account.openingBalance","value":100.0}"#))
        let nested = try peer.receive(5)
        #expect(nested.prefix(4).map { "\($0["params"]?["context"]?.stringValue ?? ""):\($0["params"]?["prior"] == true)" } == [
            "balance:true", "items:true", "items:false", "balance:false",
        ])
        #expect(nested[2]["params"]?["new"] == 1)
        #expect(nested[4]["result"]?["seq"] == 2)
        // Unchanged (onChange policy): no notifications, but the set succeeds.
        #expect(try peer.request(6, "set", #"{"path":"account.openingBalance","value":100}"#)["result"]?["seq"] == 3)
        try peer.expectQuiet()
    }

    @Test func validationCoercionAndErrors() throws {
        let server = try InProcessServer(model: InProcessServer.defaultModel())
        let peer = server.peer()
        #expect(try peer.request(1, "set", #"{"path":"contact.name","value":"  Ada  "}"#)["result"] == .json(#"{"seq":1,"value":"Ada"}"#))
        #expect(try peer.request(2, "get", #"{"path":"contact.name"}"#)["result"]?["value"] == "Ada")
        #expect(try peer.request(3, "validate", #"{"path":"contact.name","value":" Grace "}"#)["result"] == .json(#"{"value":"Grace"}"#))
        let bad = try peer.request(4, "set", #"{"path":"contact.email","value":"nope"}"#)["error"]
        #expect(bad?["code"] == 1002)
        #expect(bad?["data"]?["path"] == "contact.email")
        #expect(bad?["data"]?["reason"]?.stringValue?.isEmpty == false)
        #expect(try peer.request(5, "validate", #"{"path":"contact.email","value":"nope"}"#)["error"]?["code"] == 1002)
        #expect(try peer.request(6, "set", #"{"path":"labColor.lComponent","value":"dark"}"#)["error"]?["code"] == 1002)
        #expect(try peer.request(7, "set", ##"{"path":"labColor.color","value":"#FFFFFF"}"##)["error"]?["code"] == 1006)
        let undefined = try peer.request(8, "get", #"{"path":"labColor.nope"}"#)["error"]
        #expect(undefined?["code"] == 1001)
        #expect(undefined?["data"]?["path"] == "labColor.nope")
        #expect(try peer.request(9, "set", #"{"path":"labColor.nope","value":1}"#)["error"]?["code"] == 1001)
        #expect(try peer.request(10, "subscribe", #"{"path":"labColor.nope"}"#)["error"]?["code"] == 1001)
        #expect(try peer.request(11, "set", #"{"path":"labColor.lComponent","value":null}"#)["result"] == .json(#"{"seq":2,"value":0.0}"#))
        #expect(try peer.request(12, "get", #"{"path":"labColor.lComponent"}"#)["result"]?["value"] == 0.0)
        // Failed requests used no seq.
        #expect(try peer.request(13, "get", #"{"path":"labColor.lComponent"}"#)["result"]?["seq"] == 2)
    }

    @Test func describeAndObservers() throws {
        let server = try InProcessServer(model: InProcessServer.defaultModel())
        let peer = server.peer()
        _ = try peer.request(1, "hello", #"{"client":"describer"}"#)
        let model = try peer.request(2, "describe")["result"]
        #expect(model?["root"]?.stringValue != nil)
        let lab = model?["classes"]?["LabColor"]
        #expect(lab?["open"] == false)
        #expect(lab?["properties"]?["lComponent"]?["type"] == "double")
        let colorDependencies = lab?["properties"]?["color"]?["dependencies"]?.arrayValue ?? []
        #expect(Set(colorDependencies.compactMap(\.stringValue)).isSuperset(of: ["redComponent", "greenComponent", "blueComponent"]))
        let at = try peer.request(3, "describe", #"{"path":"person.address"}"#)["result"]
        #expect(at?["class"]?["name"] == "Address")
        #expect(at?["path"] == "person.address")
        #expect(try peer.request(4, "describe", #"{"path":"labColor.lComponent"}"#)["error"]?["code"] == 1005)
        _ = try peer.request(5, "subscribe", #"{"path":"labColor.color","options":["new","prior"],"context":{"view":1}}"#)
        let observers = try peer.request(6, "observers", #"{"path":"labColor.color"}"#)["result"]?["connections"]?.arrayValue
        #expect(observers?.count == 1)
        #expect(observers?.first?["client"] == "describer")
        #expect(observers?.first?["self"] == true)
        #expect(observers?.first?["subscriptions"] == .json(#"[{"subscription":1,"path":"labColor.color","options":["new","prior"],"context":{"view":1}}]"#))
    }
}

/// `kvod --model FILE`: the command line, against a live kvod.
@Suite(.serialized) struct ModelFileOverWireTests {
    @Test func aModelFileIsServedAndABadOneStopsKvod() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("kvod-model-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let good = directory.appendingPathComponent("good.json")
        try #"""
        {"root": "Shop", "classes": {"Shop": {"properties": {
            "price": {"type": "double", "default": 2.5, "min": 0},
            "quantity": {"type": "int", "default": 2},
            "total": {"computed": "price * quantity"}}}}}
        """#.write(to: good, atomically: true, encoding: .utf8)
        let server = try KVODProcess.start(["--model", good.path])
        let peer = try Peer(server)
        #expect(try peer.request(1, "get", #"{"path":"total"}"#)["result"]?["value"] == 5.0)
        _ = try peer.request(2, "subscribe", #"{"path":"total","options":["new","old"]}"#)
        try peer.send(Peer.requestText(3, "set", #"{"path":"quantity","value":4}"#))
        let messages = try peer.receive(2)
        #expect(messages[0]["params"]?["old"] == 5.0)
        #expect(messages[0]["params"]?["new"] == 10.0)
        #expect(try peer.request(4, "set", #"{"path":"other","value":1}"#)["error"]?["code"] == 1001, "a typed root")
        #expect(try peer.request(5, "set", #"{"path":"price","value":-1}"#)["error"]?["code"] == 1002)

        let bad = directory.appendingPathComponent("bad.json")
        try #"{"root": "Shop", "classes": {"Shop": {"properties": {"total": {"computed": "price * (quantity"}}}}}"#
            .write(to: bad, atomically: true, encoding: .utf8)
        let result = try runCommand(binaryURL(named: "kvod"), ["--model", bad.path, "--port", "0"], timeout: .seconds(10))
        #expect(result.status != 0)
        #expect(result.stderr.contains("bad.json"))
        #expect(result.stderr.contains("classes.Shop.properties.total"))
    }
}
