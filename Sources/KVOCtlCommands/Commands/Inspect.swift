// `kvoctl describe [PATH]`, `kvoctl observers [PATH]` and `kvoctl validate PATH VALUE`: the model, who observes
// what, and what a set would store — printed for people (`--format text`, the default) or as JSON.

import ArgumentParser
import KVOClient
import WireProtocol

/// How a command prints: readable text, or the server's JSON result (compact, or indented with `pretty`).
enum OutputFormat: String, ExpressibleByArgument, CaseIterable {
    case text, json, pretty

    /// Prints a JSON result as `json` or `pretty` says (coloured on a terminal: JSONOutput.swift).
    func printJSON(_ value: JSONValue) throws(ExitCode) {
        try Output.line(JSONOutput.render(value, format: self == .pretty ? .pretty : .json))
    }
}

extension KVOCtl {
    /// Prints the model, or the class of the object at a path.
    struct Describe: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Describe the model: classes, keys with types, computed keys with their dependencies, rules.",
            discussion: """
                EXAMPLES:
                  kvoctl describe                  # the whole model
                  kvoctl describe labColor         # its class and its current keys
                """)

        @OptionGroup var connection: ConnectionOptions

        @Option(help: "text (for people), json or pretty (indented JSON).")
        var format: OutputFormat = .text

        @Argument(help: "A key path to an object (default: the whole model).")
        var path: String?

        func run() throws {
            let result = try self.connection.call("describe", self.path.map { .object(["path": .string($0)]) })
            guard self.format == .text else { return try self.format.printJSON(result) }
            if let classDescription = result["class"] {
                try Output.line("\(result["path"]?.stringValue ?? "") ($\(result["id"]?.intValue ?? 0))")
                try Self.printClass(classDescription)
                if case .object(let keys)? = result["keys"], !keys.keys.isEmpty {
                    try Output.line("  current keys: " + keys.members.map { "\($0) (\($1.stringValue ?? "?"))" }.joined(separator: ", "))
                }
            } else {
                try Output.line("root class: \(result["root"]?.stringValue ?? "?")")
                if case .object(let classes)? = result["classes"] {
                    for (_, description) in classes.members { try Self.printClass(description) }
                }
            }
        }

        static func printClass(_ description: JSONValue) throws {
            let open = description["open"] == true ? " (open: any other key allowed)" : ""
            try Output.line("class \(description["name"]?.stringValue ?? "?")\(open)")
            guard case .object(let properties)? = description["properties"] else { return }
            for (name, property) in properties.members {
                if let expression = property["computed"]?.stringValue {
                    let dependencies = property["dependencies"]?.arrayValue?.compactMap(\.stringValue) ?? []
                    try Output.line("  \(name) = \(expression)   [read-only; depends on \(dependencies.joined(separator: ", "))]")
                } else {
                    var details: [String] = []
                    if let value = property["default"] { details.append("default \(JSONWriter.encodeString(value))") }
                    if property["nullable"] == false { details.append("not null") }
                    if let notify = property["notify"]?.stringValue, notify != "always" { details.append("notify \(notify)") }
                    for rule in ["trim", "min", "max", "minLength", "maxLength", "pattern", "enum", "increments"] {
                        if let value = property[rule] { details.append("\(rule) \(JSONWriter.encodeString(value))") }
                    }
                    let type = property["type"]?.stringValue ?? "any"
                    try Output.line("  \(name): \(type)" + (details.isEmpty ? "" : "   [\(details.joined(separator: "; "))]"))
                }
            }
        }
    }

    /// Prints who observes what.
    struct Observers: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the connections and their subscriptions (optionally only those of one key path).")

        @OptionGroup var connection: ConnectionOptions

        @Option(help: "text (for people), json or pretty (indented JSON).")
        var format: OutputFormat = .text

        @Argument(help: "Only subscriptions to this key path.")
        var path: String?

        func run() throws {
            let result = try self.connection.call("observers", self.path.map { .object(["path": .string($0)]) })
            guard self.format == .text else { return try self.format.printJSON(result) }
            for peer in result["connections"]?.arrayValue ?? [] {
                let client = peer["client"]?.stringValue.map { " \"\($0)\"" } ?? ""
                let me = peer["self"] == true ? " (this kvoctl)" : ""
                try Output.line("connection \(peer["connection"]?.intValue ?? 0) \(peer["remote"]?.stringValue ?? "")\(client)\(me)")
                for subscription in peer["subscriptions"]?.arrayValue ?? [] {
                    let options = subscription["options"]?.arrayValue?.compactMap(\.stringValue).joined(separator: ",") ?? ""
                    let context = subscription["context"].map { " context \(JSONWriter.encodeString($0))" } ?? ""
                    try Output.line("  #\(subscription["subscription"]?.intValue ?? 0) \(subscription["path"]?.stringValue ?? "") [\(options)]\(context)")
                }
            }
        }
    }

    /// Asks what a set would store, without storing.
    struct Validate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Validate a value for a key path without storing it; prints what would be stored.")

        @OptionGroup var connection: ConnectionOptions

        @Argument(help: "The key path.")
        var path: String

        @Argument(parsing: .allUnrecognized, help: ArgumentHelp("The value: JSON, or else a string.", valueName: "value"))
        var values: [String] = []

        @OptionGroup var output: ValueOptions

        func validate() throws {
            if self.values.count != 1 { throw ValidationError("Give exactly one VALUE.") }
        }

        func run() throws {
            let result = try self.connection.call(
                "validate", .object(["path": .string(self.path), "value": parseJSONOrString(self.values[0])]))
            try self.output.print(result["value"] ?? .null)
        }
    }
}
