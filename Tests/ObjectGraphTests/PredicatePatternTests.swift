// LIKE and MATCHES: the linear-time matcher against references (Swift's Regex as the oracle on random small
// patterns and strings where the subset applies, a plain recursive wildcard matcher for LIKE), patterns that
// would take a backtracking engine exponential time, and the [c]/[d] folding rules.

@testable import ObjectGraph
import Testing

struct PredicatePatternTests {
    /// A deterministic generator (SplitMix64), so a failure names its seed.
    struct Generator {
        var state: UInt64
        mutating func next() -> UInt64 {
            self.state &+= 0x9E37_79B9_7F4A_7C15
            var z = self.state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func below(_ bound: Int) -> Int { Int(self.next() % UInt64(bound)) }
        mutating func pick<T>(_ items: [T]) -> T { items[self.below(items.count)] }
    }

    // MARK: - MATCHES against Swift's Regex

    /// A random regular expression of the subset, over the alphabet a, b, 1, space.
    static func randomRegex(_ random: inout Generator, depth: Int = 0) -> String {
        var pattern = ""
        for _ in 0..<(1 + random.below(3)) {
            var atom: String
            switch random.below(depth < 2 ? 9 : 7) {
            case 0, 1: atom = random.pick(["a", "b", "1", " "])
            case 2: atom = "."
            case 3: atom = random.pick(["[ab]", "[^a]", "[a-b1]", "[^ 1]", "[-a]"])
            case 4: atom = random.pick(["\\d", "\\w", "\\s", "\\D", "\\W", "\\S"])
            case 5: atom = random.pick(["\\.", "\\*", "a"])
            case 6: atom = random.pick(["ab", "ba", "11"])
            default:
                let inner = (0..<(1 + random.below(2))).map { _ in Self.randomRegex(&random, depth: depth + 1) }
                atom = "(" + (random.below(2) == 0 ? "?:" : "") + inner.joined(separator: "|") + ")"
                // A group is repeated at most by `?`: Swift's Regex, the oracle, loops forever on a repeated group
                // that can match the empty string (`(a?)*`); such patterns are in the table below instead.
                if random.below(3) == 0 { atom += "?" }
                pattern += atom
                continue
            }
            switch random.below(8) {
            case 0: atom += "*"
            case 1: atom += "+"
            case 2: atom += "?"
            case 3: atom += "{\(random.below(3))}"
            case 4: atom += "{\(random.below(2)),\(2 + random.below(2))}"
            case 5: atom += "{\(random.below(2)),}"
            case 6: atom += random.pick(["*?", "+?", "??"])
            default: break
            }
            pattern += atom
        }
        return pattern
    }

    static func randomText(_ random: inout Generator) -> String {
        String((0..<random.below(7)).map { _ in random.pick(["a", "b", "1", " ", "."] as [Character]) })
    }

    @Test(arguments: 0..<8)
    func matchesAgreesWithSwiftRegex(seed: UInt64) throws {
        var random = Generator(state: seed)
        var compared = 0
        for _ in 0..<150 {
            var pattern = Self.randomRegex(&random)
            if random.below(6) == 0 { pattern = "^" + pattern }
            if random.below(6) == 0 { pattern += "$" }
            let program = try PatternProgram(regex: pattern, options: [])
            let oracle = try Regex(pattern)
            for _ in 0..<12 {
                let text = Self.randomText(&random)
                let expected = (try? oracle.wholeMatch(in: text)) != nil
                #expect(program.matches(text) == expected, "seed \(seed): '\(pattern)' against '\(text)'")
                compared += 1
            }
        }
        #expect(compared == 1800)
    }

    @Test(
        "a table of patterns, texts and answers",
        arguments: [
            ("a|b", "a", true), ("a|b", "ab", false), ("(a|b)*c", "ababc", true), ("a{2,3}", "aaaa", false),
            ("a{2,3}", "aaa", true), ("a{2}", "aa", true), ("a{0}", "", true), ("a{1,}", "aaaaaa", true),
            ("[a-c]+", "abcab", true), ("[^a-c]", "d", true), ("[^a-c]", "b", false), ("\\d+", "0123", true),
            ("\\d+", "٣٤", true), ("\\w+", "café_1", true), ("\\s", "\t", true), ("\\S", " ", false),
            (".", "\n", false), ("a.c", "a\u{2028}c", false), ("a$", "a\n", false), ("a$\\n", "a\n", true),
            ("^a", "a", true), ("a^", "a", false), ("\\u00e9", "é", true), ("\\x{1F600}", "😀", true), ("\\x41", "A", true),
            ("é", "e\u{301}", true), ("[é]", "e\u{301}", true), ("\\.", ".", true), ("\\.", "a", false),
            ("a\\*", "a*", true), ("(?:ab)+", "abab", true), ("()*a", "a", true), ("(a*)*", "", true), ("(|a)+", "aa", true),
            ("[\\]]", "]", true), ("[a\\-z]", "-", true), ("[a-]", "-", true), ("}", "}", true), ("]", "]", true),
            ("\\t\\n\\r\\f\\a\\e", "\t\n\r\u{0C}\u{07}\u{1B}", true), ("[\\d\\s]+", "1 2", true),
        ] as [(String, String, Bool)])
    func regexTable(pattern: String, text: String, expected: Bool) throws {
        #expect(try PatternProgram(regex: pattern, options: []).matches(text) == expected)
    }

    @Test(
        "refused regular expressions: offset and message",
        arguments: [
            ("(", 0, "missing ')'"), (")", 0, "unmatched ')'"), ("a)", 1, "unmatched ')'"), ("*a", 0, "nothing to repeat before '*'"),
            ("a|?", 2, "nothing to repeat before '?'"), ("^*", 1, "nothing to repeat before '*'"),
            ("a*+", 2, "possessive quantifiers are not supported"), ("a++", 2, "possessive quantifiers are not supported"),
            ("a{2}{3}", 4, "a quantifier cannot follow another; group the repeated part in (…)"),
            ("a{", 1, "expected {m}, {m,} or {m,n} after '{'"), ("a{,2}", 1, "expected {m}, {m,} or {m,n} after '{'"),
            ("a{3,2}", 1, "repetition {3,2} has its bounds out of order"), ("a{1001}", 1, "repetition count above 1000"),
            ("(?=a)", 0, "unsupported group '(?'; only (…) and (?:…) are"), ("(?i)a", 0, "unsupported group '(?'; only (…) and (?:…) are"),
            ("[]", 1, "empty character class"), ("[a", 0, "missing ']'"), ("[[:alpha:]]", 1, "nested classes and POSIX classes are not supported"),
            ("[a&&b]", 2, "class set operations are not supported"), ("[z-a]", 1, "range 'z-a' is out of order"),
            ("[\\d-z]", 3, "nothing"), ("\\", 0, "trailing backslash"), ("\\b", 0, "the escape '\\b' is not supported"),
            ("\\p{L}", 0, "the escape '\\p' is not supported"), ("(a)\\1", 3, "backreferences and octal escapes are not supported"),
            ("\\u12", 0, "expected 4 hex digits after '\\u'"), ("\\x{}", 0, "expected hex digits and '}' after '\\x{'"),
            ("\\x{110000}", 0, "the escape is not a Unicode scalar"),
        ] as [(String, Int, String)])
    func refusedRegex(pattern: String, offset: Int, message: String) {
        if message == "nothing" {  // `[\d-z]`: a class, then '-' and 'z' as members, as ICU reads it
            #expect((try? PatternProgram(regex: pattern, options: []))?.matches("-") == true)
            return
        }
        #expect(throws: PatternError(offset: offset, message: message)) { try PatternProgram(regex: pattern, options: []) }
    }

    @Test func programsStayWithinTheLimit() throws {
        #expect(throws: PatternError(offset: 0, message: "regular expression too large (limit 4096 states)")) {
            try PatternProgram(regex: "(a{1000}){5}", options: [])
        }
        #expect(throws: PatternError(offset: 0, message: "regular expression too large (limit 4096 states)")) {
            try PatternProgram(regex: "((((a|b){1000}){1000}){1000}){1000}", options: [])
        }
        let big = try PatternProgram(regex: "[ab]{1000}x{0,1000}", options: [])
        #expect(big.instructions.count <= PatternProgram.maxInstructions)
        #expect(big.matches(String(repeating: "ab", count: 500) + "xxx"))
        #expect(!big.matches(String(repeating: "ab", count: 499) + "xxx"))
        #expect(throws: PatternError(offset: 4096, message: "pattern longer than 4096 characters")) {
            try PatternProgram(regex: String(repeating: "a", count: 4097), options: [])
        }
    }

    // MARK: - Patterns that are catastrophic for backtracking engines

    @Test func catastrophicPatternsFinishWithTheRightAnswer() throws {
        let as10k = String(repeating: "a", count: 10_000)
        #expect(try !PatternProgram(regex: "(a*)*b", options: []).matches(as10k))
        #expect(try PatternProgram(regex: "(a*)*b", options: []).matches(as10k + "b"))
        #expect(try !PatternProgram(regex: "(a|aa)+c", options: []).matches(as10k))
        #expect(try PatternProgram(regex: "(a|a)*", options: []).matches(as10k))
        #expect(try !PatternProgram(regex: "(a+)+$b", options: []).matches(as10k))
        #expect(try !PatternProgram(regex: "(.*a){20}x", options: []).matches(as10k))
        #expect(try PatternProgram(regex: "(.*a){20}", options: []).matches(as10k))
        #expect(try !PatternProgram(like: "*a*a*a*a*a*a*a*a*a*a*b", options: []).matches(as10k))
        #expect(try PatternProgram(like: "*a*a*a*a*a*a*a*a*a*a*", options: []).matches(as10k))
        // Through the predicate language too.
        let predicate = try Predicate(parsing: "SELF MATCHES '(a*)*b' OR SELF LIKE '*a*a*a*a*a*a*b'")
        #expect(!Graph().matches(predicate, element: .string(as10k), variables: [:], collector: nil))
    }

    // MARK: - LIKE against a reference

    /// The reference: a direct recursive reading of LIKE's definition, memoized (small inputs only).
    static func referenceLike(_ pattern: [Character], _ text: [Character]) -> Bool {
        var memo: [Int: Bool] = [:]
        func match(_ p: Int, _ t: Int) -> Bool {
            if let known = memo[p * 1000 + t] { return known }
            let result: Bool
            if p == pattern.count {
                result = t == text.count
            } else if pattern[p] == "*" {
                result = match(p + 1, t) || (t < text.count && match(p, t + 1))
            } else if pattern[p] == "\\" && p + 1 < pattern.count {
                result = t < text.count && text[t] == pattern[p + 1] && match(p + 2, t + 1)
            } else {
                result = t < text.count && (pattern[p] == "?" || pattern[p] == text[t]) && match(p + 1, t + 1)
            }
            memo[p * 1000 + t] = result
            return result
        }
        return match(0, 0)
    }

    @Test(arguments: 0..<4)
    func likeAgreesWithTheReference(seed: UInt64) throws {
        var random = Generator(state: seed)
        for _ in 0..<300 {
            let pattern = Array((0..<random.below(8)).map { _ in random.pick(["a", "b", "*", "?", "\\", "*"] as [Character]) })
            let program = try PatternProgram(like: String(pattern), options: [])
            for _ in 0..<10 {
                let text = Array((0..<random.below(8)).map { _ in random.pick(["a", "b", "*", "?", "\\"] as [Character]) })
                #expect(
                    program.matches(String(text)) == Self.referenceLike(pattern, text),
                    "seed \(seed): LIKE '\(String(pattern))' against '\(String(text))'")
            }
        }
    }

    @Test(
        "LIKE: wildcards, escapes, options",
        arguments: [
            ("a*", "abc", [], true), ("*c", "abc", [], true), ("a?c", "abc", [], true), ("a?c", "ac", [], false),
            ("a\\*", "a*", [], true), ("a\\*", "ab", [], false), ("a\\?", "a?", [], true), ("a\\\\", "a\\", [], true),
            ("a\\", "a\\", [], true), ("*", "", [], true), ("?", "", [], false), ("?", "\n", [], true),
            ("*.txt", "notes.txt", [], true), ("É*", "école", [.caseInsensitive, .diacriticInsensitive], true),
            ("E*", "école", [.caseInsensitive], false), ("É*", "école", [.caseInsensitive], true), ("É*", "Ecole", [.diacriticInsensitive], true),
            ("caf?", "cafe\u{301}", [], true), ("cafe?", "cafe\u{301}", [], false), ("STRASSE", "straße", [.caseInsensitive], false),
        ] as [(String, String, Predicate.Options, Bool)])
    func likeTable(pattern: String, text: String, options: Predicate.Options, expected: Bool) throws {
        #expect(try PatternProgram(like: pattern, options: options).matches(text) == expected)
    }

    @Test func regexOptions() throws {
        let caseless = try PatternProgram(regex: "[A-C]x\\w", options: .caseInsensitive)
        #expect(caseless.matches("bX1"))
        #expect(caseless.matches("BXé"))
        #expect(!caseless.matches("dx1"))
        #expect(try PatternProgram(regex: "[^a]", options: .caseInsensitive).matches("A") == false)
        #expect(try PatternProgram(regex: "caf[é]", options: .diacriticInsensitive).matches("cafe"))
        #expect(try PatternProgram(regex: "café", options: .diacriticInsensitive).matches("cafe\u{301}"))
        #expect(try PatternProgram(regex: "CAFÉ", options: [.caseInsensitive, .diacriticInsensitive]).matches("cafe"))
        #expect(try !PatternProgram(regex: "café", options: []).matches("cafe"))
    }

    // MARK: - Folding

    @Test func diacriticFolding() {
        #expect(PredicateFolding.latin.count == 0x250 - 0xC0)
        #expect(PredicateFolding.latinAdditional.count == 0x100)
        #expect(PredicateFolding.removingDiacritics("ÀÉÎÕÜÇÑÝàéîõüçñýÿ") == "AEIOUCNYaeioucnyy")
        #expect(PredicateFolding.removingDiacritics("ĀăĄćĈċČďĒĕĘěĜğĠģĤĩĪĭĮİĴķĹļĽńŅňŌŏŐŔŗŘśŜşŠţŤũŪŭŮűŲŵŶźŻž")
            == "AaAcCcCdEeEeGgGgHiIiIIJkLlLnNnOoORrRsSsStTuUuUuUwYzZz")
        #expect(PredicateFolding.removingDiacritics("ǕǢǾǺȘțẠệỹ") == "UÆØAStAey")
        #expect(PredicateFolding.removingDiacritics("e\u{301}a\u{308}\u{36F}") == "ea")
        #expect(PredicateFolding.removingDiacritics("øłđħæßıŒ×÷") == "øłđħæßıŒ×÷")  // no decomposition: unchanged
        #expect(PredicateFolding.removingDiacritics("ά日本語") == "ά日本語")  // other scripts: only U+0300–U+036F go
        #expect(PredicateFolding.removingDiacritics("α\u{301}") == "α")
        #expect(PredicateFolding.fold("ÉCOLE", [.caseInsensitive, .diacriticInsensitive]) == "ecole")
        #expect(PredicateFolding.fold("İ", [.caseInsensitive, .diacriticInsensitive]) == "i")
        #expect(PredicateFolding.fold("ÉCOLE", []) == "ÉCOLE")
    }
}
