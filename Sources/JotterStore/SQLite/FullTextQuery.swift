/// Turns a user's search words into an FTS5 MATCH expression that cannot fail or inject syntax.
///
/// Each word (split at white space and control characters) becomes one quoted phrase (inner `"`
/// doubled) followed by FTS5's prefix marker, and the phrases are AND-ed:
/// `buy "milk" NEAR(` → `"buy" * AND """milk""" * AND "NEAR(" *`. Inside quotes FTS5 reads no
/// operators, columns or parentheses; the tokenizer just splits the phrase into words, and the
/// `*` after the closing quote makes its last word match any word that starts with it — so
/// `shop` finds "Shopping" while it is being typed.
///
/// Words with no letter or digit (`*`, `"`, `--`) are dropped: the `unicode61` tokenizer makes no
/// token from them, and an empty phrase would make the whole query match nothing. A search made
/// only of such words can match no note; a blank search is no filter.
///
/// ```swift
/// FullTextQuery(search: "café  au lait") // .match("\"café\" * AND \"au\" * AND \"lait\" *")
/// FullTextQuery(search: "  ")            // .everything
/// FullTextQuery(search: " * ")           // .nothing
/// ```
enum FullTextQuery: Equatable {
    /// No filter (no search, or a blank one).
    case everything
    /// Notes matching this FTS5 MATCH expression.
    case match(String)
    /// No note can match (the search has no searchable word).
    case nothing

    init(search: String?) {
        guard let words = Self.words(of: search) else {
            self = .everything
            return
        }
        let phrases = words.map { word in "\"" + word.replacing("\"", with: "\"\"") + "\" *" }
        self = phrases.isEmpty ? .nothing : .match(phrases.joined(separator: " AND "))
    }

    /// The words a search is made of (the PostgreSQL store searches for the same ones): nil
    /// for a blank search (no filter), empty when no word has a letter or digit (no match).
    static func words(of search: String?) -> [Substring]? {
        // Control characters (NUL included) separate words like white space: FTS5 must never see them.
        let words = (search ?? "").split(whereSeparator: {
            $0.isWhitespace || $0.unicodeScalars.contains { $0.properties.generalCategory == .control }
        })
        guard !words.isEmpty else { return nil }
        return words.filter { word in word.unicodeScalars.contains(where: Self.isTokenCharacter) }
    }

    /// What `unicode61` keeps in tokens by default: letters, numbers, private-use characters.
    static func isTokenCharacter(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
            .decimalNumber, .letterNumber, .otherNumber, .privateUse:
            return true
        default:
            return false
        }
    }
}
