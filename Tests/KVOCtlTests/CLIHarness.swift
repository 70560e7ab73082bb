// Shared helpers for the kvoctl tests: run the real kvoctl binary against a real kvod, parse its JSON output, and
// wait (bounded) until a watcher's subscription exists on the server.

import Foundation
import TestSupport
import Testing
import WireProtocol

/// Runs the real `kvoctl` binary.
enum CLI {
    /// kvoctl's path (built next to the tests).
    static func executable() throws -> URL {
        try existingBinaryURL(named: "kvoctl")
    }

    /// Runs `kvoctl arguments` pointed at `server` (its `--host`/`--port` appended) to completion.
    static func run(
        _ arguments: [String], on server: KVODProcess? = nil, stdin: String? = nil,
        environment: [String: String]? = nil, timeout: Duration = .seconds(20)
    ) throws -> CommandResult {
        try runCommand(
            try self.executable(), arguments + (server?.connectionArguments ?? []), stdin: stdin,
            environment: environment, timeout: timeout)
    }

    /// Starts `kvoctl arguments` pointed at `server` in the background.
    static func start(_ arguments: [String], on server: KVODProcess) throws -> RunningCommand {
        try RunningCommand(try self.executable(), arguments + server.connectionArguments)
    }
}

/// Runs `body` with a fresh kvod, which is stopped afterwards (holding it here keeps it alive for all of `body`).
func withKVOD(_ body: (KVODProcess) throws -> Void) throws {
    let server = try KVODProcess.start()
    defer { server.stop() }
    try body(server)
}

/// Parses one line of kvoctl output as JSON.
func parseJSON(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> JSONValue {
    do {
        return try JSONParser.parse(text)
    } catch {
        Issue.record("not JSON: \(text) (\(error))", sourceLocation: sourceLocation)
        throw error
    }
}

/// `value` with every object's `"$id"` member removed (kvod adds one to each object it returns; tests compare the
/// data, not the ids).
func withoutObjectIDs(_ value: JSONValue) -> JSONValue {
    switch value {
    case .array(let elements):
        return .array(elements.map(withoutObjectIDs))
    case .object(let object):
        var stripped = JSONObject()
        for (key, member) in object.members where key != "$id" { stripped[key] = withoutObjectIDs(member) }
        return .object(stripped)
    default:
        return value
    }
}

/// Waits until some connection of `server` has a subscription to exactly `path` (asked with the `observers`
/// method, after presenting `token` when kvod has access control), so a test can make a change that a background
/// `kvoctl watch` must see.
func waitForSubscription(
    on server: KVODProcess, path: String, token: String? = nil, timeout: Duration = .seconds(10)
) throws {
    let client = try server.client()
    defer { client.close() }
    if let token { _ = try client.call("hello", ["token": .string(token)]) }
    let deadline = ContinuousClock.now.advanced(by: timeout)
    while ContinuousClock.now < deadline {
        let result = try client.call("observers", ["path": .string(path)])
        let subscriptions = result["connections"]?.arrayValue?.flatMap { $0["subscriptions"]?.arrayValue ?? [] } ?? []
        if subscriptions.contains(where: { $0["path"] == .string(path) }) { return }
        Thread.sleep(forTimeInterval: 0.02)
    }
    Issue.record("no subscription to '\(path)' appeared within \(timeout)")
    throw CancellationError()
}
