// Replays Protocol/examples/*.jsonl against a fresh live kvod each, so the protocol document cannot drift from the
// code. Transcript lines: {"conn":"A","send":JSON} sends a message; {"conn":"A","sendText":"..."} sends raw text;
// {"conn":"A","recv":JSON} expects the next message on that connection to equal JSON (object member order aside);
// {"conn":"A","recvMatch":JSON} expects it to contain JSON (extra members allowed); {"comment":"..."} is prose.
// kvod serves an empty open root (`--empty`) unless the first line is {"kvod": [ARGS]}: then it runs with ARGS
// (`[]` is the embedded default model).
import Foundation
import KVOClient
import TestSupport
import Testing
import WireProtocol

struct TranscriptTests {
    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Protocol/examples")

    static var transcripts: [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: Self.directory.path)) ?? []
        return names.filter { $0.hasSuffix(".jsonl") }.sorted()
    }

    @Test func thereAreTranscripts() {
        #expect(Self.transcripts.count >= 4)
    }

    @Test("transcript replays against a live kvod", arguments: TranscriptTests.transcripts)
    func replay(_ name: String) throws {
        let text = try String(contentsOf: Self.directory.appendingPathComponent(name), encoding: .utf8)
        let lines = text.split(separator: "\n").filter { !$0.isEmpty }
        var arguments: [String]?
        if let first = lines.first, case .array(let items)? = try JSONParser.parse(String(first))["kvod"] {
            arguments = items.compactMap(\.stringValue)
        }
        let server = try arguments.map { try KVODProcess.start($0, defaultModel: true) } ?? KVODProcess.start()
        var peers: [String: Peer] = [:]
        for (number, line) in lines.enumerated() {
            let step = try JSONParser.parse(String(line))
            let context = "\(name):\(number + 1)"
            if step["comment"] != nil || step["kvod"] != nil { continue }
            guard case .string(let name)? = step["conn"] else {
                Issue.record("\(context): no conn")
                continue
            }
            let peer = try peers[name] ?? Peer(server)
            peers[name] = peer
            if let message = step["send"] {
                try peer.send(JSONWriter.encodeString(message))
            } else if case .string(let raw)? = step["sendText"] {
                try peer.send(raw)
            } else if let expected = step["recv"] {
                let actual = try peer.receive()
                #expect(actual == expected, "\(context): got \(actual)")
            } else if let expected = step["recvMatch"] {
                let actual = try peer.receive()
                #expect(Self.contains(actual, expected), "\(context): got \(actual)")
            } else {
                Issue.record("\(context): unknown step \(step)")
            }
        }
        for peer in peers.values { try peer.expectQuiet() }
        #expect(server.stop() == 0)
    }

    /// True when `actual` has every member of `expected` (recursively); arrays must match element by element.
    static func contains(_ actual: JSONValue, _ expected: JSONValue) -> Bool {
        switch (actual, expected) {
        case (.object(let have), .object(let want)):
            return want.members.allSatisfy { key, value in have[key].map { Self.contains($0, value) } ?? false }
        case (.array(let have), .array(let want)):
            return have.count == want.count && zip(have, want).allSatisfy { Self.contains($0, $1) }
        default:
            return actual == expected
        }
    }
}
