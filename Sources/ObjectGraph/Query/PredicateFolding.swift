// The `[c]` and `[d]` options without Foundation: case folding by Swift's `lowercased()` and diacritic folding by a
// fixed table, so that a predicate means the same on every platform and Swift version.
//
// `[d]`, exactly: every combining diacritical mark U+0300–U+036F is dropped, and every letter of Latin-1 Supplement,
// Latin Extended-A and -B (U+00C0–U+024F) and Latin Extended Additional (U+1E00–U+1EFF) whose canonical
// decomposition is one letter followed by marks of U+0300–U+036F becomes that letter (é → e, Ǖ → U, ệ → e,
// Ǣ → Æ). Letters without such a decomposition stay as they are: ø, ł, đ, ħ, æ, ß, ı are not e.g. o or l (their
// strokes and ligatures are part of the letter). Other scripts keep their diacritics, except for the combining marks.

enum PredicateFolding {
    /// `text` folded as `options` say: diacritics first, then lowercased.
    static func fold(_ text: String, _ options: Predicate.Options) -> String {
        if options.isEmpty { return text }
        var folded = text
        if options.contains(.diacriticInsensitive) { folded = Self.removingDiacritics(folded) }
        if options.contains(.caseInsensitive) { folded = folded.lowercased() }
        return folded
    }

    /// `text` without diacritics (the rule at the top of this file).
    static func removingDiacritics(_ text: String) -> String {
        if text.utf8.allSatisfy({ $0 < 0x80 }) { return text }  // ASCII: nothing to fold
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x300...0x36F:
                continue
            case 0xC0...0x24F:
                scalars.append(Self.base(scalar, in: Self.latin, from: 0xC0))
            case 0x1E00...0x1EFF:
                scalars.append(Self.base(scalar, in: Self.latinAdditional, from: 0x1E00))
            default:
                scalars.append(scalar)
            }
        }
        return String(scalars)
    }

    private static func base(_ scalar: Unicode.Scalar, in table: [Unicode.Scalar], from first: UInt32) -> Unicode.Scalar {
        let index = Int(scalar.value - first)
        guard index < table.count, table[index] != "_" else { return scalar }
        return table[index]
    }

    /// The base letter of each scalar from U+00C0 to U+024F, `_` where it has none (generated from Unicode 14's
    /// canonical decompositions).
    static let latin: [Unicode.Scalar] = Array(
        [
            "AAAAAA_CEEEEIIII_NOOOOO__UUUUY__aaaaaa_ceeeeiiii_nooooo__uuuuy_y",  // U+00C0
            "AaAaAaCcCcCcCcDd__EeEeEeEeEeGgGgGgGgHh__IiIiIiIiI___JjKk_LlLlLl_",  // U+0100
            "___NnNnNn___OoOoOo__RrRrRrSsSsSsSsTtTt__UuUuUuUuUuUuWwYyYZzZzZz_",  // U+0140
            "________________________________Oo_____________Uu_______________",  // U+0180
            "_____________AaIiOoUuUuUuUuUu_AaAaÆæ__GgKkOoOoƷʒj___Gg__NnAaÆæØø",  // U+01C0
            "AaAaEeEeIiIiOoOoRrRrUuUuSsTt__Hh______AaEeOoOoOoOoYy____________",  // U+0200
            "________________",  // U+0240
        ].joined().unicodeScalars)

    /// The base letter of each scalar from U+1E00 to U+1EFF, `_` where it has none.
    static let latinAdditional: [Unicode.Scalar] = Array(
        [
            "AaBbBbBbCcDdDdDdDdDdEeEeEeEeEeFfGgHhHhHhHhHhIiIiKkKkKkLlLlLlLlMm",  // U+1E00
            "MmMmNnNnNnNnOoOoOoOoPpPpRrRrRrRrSsSsSsSsSsTtTtTtTtUuUuUuUuUuVvVv",  // U+1E40
            "WwWwWwWwWwXxXxYyZzZzZzhtwy_ſ____AaAaAaAaAaAaAaAaAaAaAaAaEeEeEeEe",  // U+1E80
            "EeEeEeEeIiIiOoOoOoOoOoOoOoOoOoOoOoOoUuUuUuUuUuUuUuYyYyYyYy______",  // U+1EC0
        ].joined().unicodeScalars)
}
