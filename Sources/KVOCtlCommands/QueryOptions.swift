// The query flags of `kvoctl get` and `kvoctl watch` (--where, --var, --order-by, --offset, --limit, --select) and
// the wire's `query` object they make (Protocol/methods.md#queries). The window a live query's notifications keep is
// QueryWindow.swift.

import ArgumentParser
import WireProtocol

/// A query on a collection: which elements (`--where`, `--var`), in which order (`--order-by`), which window
/// (`--offset`, `--limit`) and which keys of each (`--select`).
struct QueryOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Keep the elements this predicate holds for (NSPredicate's syntax, e.g. 'score > $min').",
            valueName: "predicate"))
    var `where`: String?

    @Option(
        name: .customLong("var"),
        help: ArgumentHelp(
            "A variable of the predicate, NAME=VALUE (VALUE is JSON, or else a string); repeat for more.",
            valueName: "name=value"))
    var vars: [String] = []

    @Option(
        name: .customLong("order-by"),
        parsing: .unconditionalSingleValue,  // `--order-by -score`: the value starts with a dash
        help: ArgumentHelp(
            "Sort by this key path of the element (-KEY: descending; self: the element itself); repeat for "
                + "tie-breaks. Default: the collection's own order.",
            valueName: "key"))
    var orderBy: [String] = []

    @Option(help: ArgumentHelp("Skip this many matches (default 0).", valueName: "n"))
    var offset: Int?

    @Option(help: ArgumentHelp("Show at most this many matches (default: all).", valueName: "n"))
    var limit: Int?

    @Option(
        help: ArgumentHelp(
            "Show only this key path of each element; repeat for more (default: every key it stores).",
            valueName: "key"))
    var select: [String] = []

    /// True when any query flag was given: the command sends a query.
    var isQuery: Bool {
        self.where != nil || !self.vars.isEmpty || !self.orderBy.isEmpty || self.offset != nil || self.limit != nil
            || !self.select.isEmpty
    }

    /// Rejects invalid values with a ValidationError (exit status 64).
    func validate() throws {
        if let offset = self.offset, offset < 0 { throw ValidationError("--offset must be 0 or more.") }
        if let limit = self.limit, limit < 0 { throw ValidationError("--limit must be 0 or more.") }
        for variable in self.vars where !variable.contains("=") || variable.hasPrefix("=") {
            throw ValidationError("--var takes NAME=VALUE, not '\(variable)'.")
        }
        for key in self.orderBy + self.select where key.isEmpty || key == "-" {
            throw ValidationError("--order-by and --select take a key path.")
        }
    }

    /// The wire's `query` object, with only the members given.
    var query: JSONValue {
        var query = JSONObject()
        if let predicate = self.where { query["where"] = .string(predicate) }
        if !self.vars.isEmpty {
            var vars = JSONObject()
            for variable in self.vars {
                let name = String(variable.prefix { $0 != "=" })
                vars[name] = parseJSONOrString(String(variable.dropFirst(name.count + 1)))
            }
            query["vars"] = .object(vars)
        }
        if !self.orderBy.isEmpty { query["orderBy"] = .array(self.orderBy.map(Self.sortDescriptor)) }
        if let offset = self.offset { query["offset"] = .int(Int64(offset)) }
        if let limit = self.limit { query["limit"] = .int(Int64(limit)) }
        if !self.select.isEmpty { query["select"] = .array(self.select.map(JSONValue.string)) }
        return .object(query)
    }

    /// `KEY` or `-KEY` as the wire takes them; a JSON object (`{"key":"name","caseInsensitive":true}`) as it is.
    static func sortDescriptor(_ text: String) -> JSONValue {
        if text.hasPrefix("{"), let object = try? JSONParser.parse(text), object.objectValue != nil { return object }
        return .string(text)
    }
}
