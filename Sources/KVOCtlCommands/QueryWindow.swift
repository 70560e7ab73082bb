// The window of a live query as `kvoctl watch` shows it: kept only from the subscription's notifications (a
// `setting`, then insertions, removals and replacements with indexes relative to the window, and `count`:
// Protocol/methods.md#queries), and drawn as a table. Pure: the command does the I/O.

import WireProtocol

/// A live query's window, built from its notifications.
struct QueryWindow {
    /// The elements shown, in order.
    private(set) var rows: [JSONValue] = []
    /// The number of matches in all, as of the last notification.
    private(set) var count: Int64 = 0
    /// The seq of the last notification applied.
    private(set) var seq: Int64?

    /// A notification that does not fit the window.
    struct Mismatch: Error, CustomStringConvertible {
        let description: String
    }

    /// Applies one notification's params (a prior changes nothing). Throws Mismatch for one that does not fit: an
    /// index out of range, or rows missing (the subscription must have `new`).
    mutating func apply(_ params: JSONValue) throws(Mismatch) {
        if params["prior"] == true { return }
        let kind = params["kind"]?.stringValue ?? "setting"
        let seq = params["seq"]?.intValue ?? 0
        let new = params["new"]?.arrayValue
        if kind == "setting" {
            guard let new else { throw Mismatch(description: "a setting at seq \(seq) without the window") }
            self.rows = new
        } else {
            guard let indexes = params["indexes"]?.arrayValue?.compactMap({ $0.intValue }).map({ Int($0) }) else {
                throw Mismatch(description: "a \(kind) at seq \(seq) without indexes")
            }
            switch kind {
            case "insertion":
                guard let new, new.count == indexes.count else {
                    throw Mismatch(description: "an insertion at seq \(seq) without its rows")
                }
                // Positions after the insertion: inserting in ascending order puts each in its place.
                for (index, row) in zip(indexes, new).sorted(by: { $0.0 < $1.0 }) {
                    guard index >= 0, index <= self.rows.count else {
                        throw Mismatch(description: "an insertion at \(index) into \(self.rows.count) rows")
                    }
                    self.rows.insert(row, at: index)
                }
            case "removal":
                // Positions before the removal: removing from the highest keeps the others in place.
                for index in indexes.sorted(by: >) {
                    guard index >= 0, index < self.rows.count else {
                        throw Mismatch(description: "a removal at \(index) from \(self.rows.count) rows")
                    }
                    self.rows.remove(at: index)
                }
            case "replacement":
                guard let new, new.count == indexes.count else {
                    throw Mismatch(description: "a replacement at seq \(seq) without its rows")
                }
                for (index, row) in zip(indexes, new) {
                    guard index >= 0, index < self.rows.count else {
                        throw Mismatch(description: "a replacement at \(index) in \(self.rows.count) rows")
                    }
                    self.rows[index] = row
                }
            default:
                throw Mismatch(description: "an unknown kind \(kind) at seq \(seq)")
            }
        }
        if let count = params["count"]?.intValue { self.count = count }
        self.seq = seq
    }

    /// The window as lines of text: a heading (`seq 7: rows 1-3 of 12 matches`), then a table with each row's
    /// place among the matches (from 1), `$id` for objects and one column per key (the selected keys in order, else each key as first seen),
    /// strings unquoted and anything else as compact JSON.
    func table(offset: Int, select: [String]) -> [String] {
        let first = offset + 1
        let last = offset + self.rows.count
        var heading = "seq \(self.seq.map(String.init) ?? "-"): "
        heading += self.rows.isEmpty ? "no rows" : "rows \(first)-\(last)"
        heading += " of \(self.count) \(self.count == 1 ? "match" : "matches")"
        guard !self.rows.isEmpty else { return [heading] }
        let objects = self.rows.allSatisfy { $0.objectValue != nil }
        var columns = ["#"]
        if objects {
            columns.append("$id")
            var keys = select
            for row in self.rows {
                for key in row.objectValue?.keys ?? [] where key != "$id" && !keys.contains(key) { keys.append(key) }
            }
            columns += keys
        } else {
            columns.append("value")
        }
        let cells: [[String]] = self.rows.enumerated().map { index, row in
            var line = [String(offset + index + 1)]
            if objects {
                for key in columns.dropFirst() {
                    line.append(row[key].map { JSONOutput.render($0, format: .text, color: false) } ?? "")
                }
            } else {
                line.append(JSONOutput.render(row, format: .text, color: false))
            }
            return line
        }
        let widths = columns.indices.map { column in
            ([columns[column]] + cells.map { $0[column] }).map(\.count).max() ?? 0
        }
        func render(_ line: [String]) -> String {
            var text = ""
            for (column, cell) in line.enumerated() {
                let padding = String(repeating: " ", count: widths[column] - cell.count)
                // Numbers and the position read best right-aligned; text left-aligned.
                let numeric = column == 0 || Double(cell) != nil
                text += (column == 0 ? "" : "  ") + (numeric ? padding + cell : cell + padding)
            }
            while text.hasSuffix(" ") { text.removeLast() }
            return text
        }
        return [heading, render(columns)] + cells.map(render)
    }
}
