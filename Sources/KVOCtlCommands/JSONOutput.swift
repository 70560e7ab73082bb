// How kvoctl prints JSON values: `--format json` (compact, one line), `pretty` (indented) or `text` (a string as its
// text, anything else compact), and by default pretty on a terminal and compact when piped, as jq and etcdctl do.
// On a terminal the JSON is coloured (jq's colours) unless NO_COLOR is set (https://no-color.org) or TERM is dumb;
// CLICOLOR_FORCE=1 colours it anywhere.

import ArgumentParser
import WireProtocol
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How a command prints a JSON value.
enum ValueFormat: String, ExpressibleByArgument, CaseIterable {
    /// Compact JSON on one line.
    case json
    /// Indented JSON.
    case pretty
    /// A string as its text (no quotes, no escapes); any other value as compact JSON.
    case text
}

/// The `--format` of the commands that print a value (get, set, the collection commands, tx, validate, hello, ls).
struct ValueOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "json (one compact line), pretty (indented) or text (strings unquoted) (default: pretty on a terminal, "
                + "json when piped; coloured on a terminal unless NO_COLOR is set).",
            valueName: "format"))
    var format: ValueFormat?

    /// The format in effect: the flag, else pretty on a terminal and json otherwise.
    var resolved: ValueFormat {
        self.format ?? (JSONOutput.isTerminal ? .pretty : .json)
    }

    /// Prints `value` in the format in effect.
    func print(_ value: JSONValue) throws(ExitCode) {
        try Output.line(JSONOutput.render(value, format: self.resolved))
    }
}

/// Rendering JSON for people and for pipes.
enum JSONOutput {
    /// Whether stdout is a terminal.
    static var isTerminal: Bool { isatty(STDOUT_FILENO) == 1 }

    /// Whether to colour: CLICOLOR_FORCE=1 always; else on a terminal, unless NO_COLOR is set or TERM is dumb.
    static var usesColor: Bool {
        if let force = getenv("CLICOLOR_FORCE"), String(cString: force) != "0", String(cString: force) != "" {
            return true
        }
        if let noColor = getenv("NO_COLOR"), !String(cString: noColor).isEmpty { return false }
        if let term = getenv("TERM"), String(cString: term) == "dumb" { return false }
        return self.isTerminal
    }

    /// `value` as text in `format`, coloured when `usesColor`.
    static func render(_ value: JSONValue, format: ValueFormat, color: Bool = JSONOutput.usesColor) -> String {
        switch format {
        case .text:
            if case .string(let text) = value { return text }
            return Renderer(pretty: false, color: color).render(value)
        case .json:
            return Renderer(pretty: false, color: color).render(value)
        case .pretty:
            return Renderer(pretty: true, color: color).render(value)
        }
    }

    /// Writes JSON with optional indentation and ANSI colours (jq's: keys blue, strings green, null grey).
    private struct Renderer {
        let pretty: Bool
        let color: Bool

        private static let keyColor = "34;1", stringColor = "32", nullColor = "1;30", plainColor = "0;39"
        private static let structureColor = "1;39"

        func render(_ value: JSONValue) -> String {
            var text = ""
            self.append(value, depth: 0, to: &text)
            return text
        }

        private func paint(_ text: String, _ code: String, to output: inout String) {
            guard self.color else {
                output += text
                return
            }
            output += "\u{1B}[\(code)m\(text)\u{1B}[0m"
        }

        private func newline(_ depth: Int, to output: inout String) {
            guard self.pretty else { return }
            output += "\n" + String(repeating: "  ", count: depth)
        }

        private func append(_ value: JSONValue, depth: Int, to output: inout String) {
            switch value {
            case .null:
                self.paint("null", Self.nullColor, to: &output)
            case .bool, .int, .double:
                self.paint(JSONWriter.encodeString(value), Self.plainColor, to: &output)
            case .string:
                self.paint(JSONWriter.encodeString(value), Self.stringColor, to: &output)
            case .array(let elements):
                self.paint("[", Self.structureColor, to: &output)
                for (index, element) in elements.enumerated() {
                    if index > 0 { self.paint(",", Self.structureColor, to: &output) }
                    self.newline(depth + 1, to: &output)
                    self.append(element, depth: depth + 1, to: &output)
                }
                if !elements.isEmpty { self.newline(depth, to: &output) }
                self.paint("]", Self.structureColor, to: &output)
            case .object(let object):
                self.paint("{", Self.structureColor, to: &output)
                for (index, (key, member)) in object.members.enumerated() {
                    if index > 0 { self.paint(",", Self.structureColor, to: &output) }
                    self.newline(depth + 1, to: &output)
                    self.paint(JSONWriter.encodeString(.string(key)), Self.keyColor, to: &output)
                    self.paint(":", Self.structureColor, to: &output)
                    if self.pretty { output += " " }
                    self.append(member, depth: depth + 1, to: &output)
                }
                if !object.keys.isEmpty { self.newline(depth, to: &output) }
                self.paint("}", Self.structureColor, to: &output)
            }
        }
    }
}
