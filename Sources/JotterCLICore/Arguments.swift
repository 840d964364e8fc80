import JotterHTTP

/// A usage mistake on the command line: one line and a pointer to `--help`, exit code 2.
public struct UsageError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// What an option is on the command line, declared once: the parser reads the arguments
/// against it, and `--help`, the man page and the completions list it. A command declares its
/// options typed (`Option.integer`, `.text`, `.flag`, …, a `TypedOption`) and reads their values
/// through those declarations; this is what they all share.
package struct Option: Sendable {
    /// Its spellings, short first: `-X`, `--request`.
    package let names: [String]
    /// What its value is called in the help (`METHOD`); `nil` for a flag.
    package let value: String?
    /// The environment variable read when the option is not given.
    package let environment: String?
    /// The default shown in the help.
    package internal(set) var defaultValue: String?
    /// Whether the option may be given several times, every value kept (`-d a=1 -d b=2`).
    package let repeats: Bool
    package let help: String
    /// How a usage line shows it: on its own (`[--limit N]`), in the brackets of the option
    /// before it (`[--limit N | --all]`), without brackets (`--data DIR`), or within
    /// `[options]` with the other options every client command takes.
    package internal(set) var shown = Shown.alone

    package enum Shown: Sendable {
        case alone
        case alternative
        case required
        case common
    }

    package init(
        _ names: [String], value: String? = nil, environment: String? = nil, default defaultValue: String? = nil,
        repeats: Bool = false, help: String
    ) {
        self.names = names
        self.value = value
        self.environment = environment
        self.defaultValue = defaultValue
        self.repeats = repeats
        self.help = help
    }

    /// The long name, the key its values are found under: `--request`.
    package var key: String { names.last! }

    /// The values it takes when its value lists them (`value: "required|off"`: `required`,
    /// `off`), for completions; empty for a placeholder such as `FILE` or `PATH|-`.
    package var choices: [String] { Self.choices(value ?? "") }

    /// The words of `required|off` (lower-case words joined by `|`); none for `FILE`, `N`, `PATH|-`.
    package static func choices(_ text: String) -> [String] {
        let words = text.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
        guard words.count > 1,
            words.allSatisfy({ word in
                !word.isEmpty && word.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) }
            })
        else { return [] }
        return words
    }

    /// This option shown within `[options]` in the usage lines: one every client command takes.
    package var common: Option {
        var option = self
        option.shown = .common
        return option
    }

    /// How a usage line names it: `--limit N`, `--all`, `-H 'Name: value'`.
    var synopsis: String { names[0] + (value.map { " " + $0 } ?? "") }

    /// The options' part of a usage line: `[--limit N | --all]`, `[-H 'Name: value']…`,
    /// `--data DIR`, then `[options]` for the common ones, or for all when a command has more
    /// than six of its own.
    package static func usage(_ options: [Option]) -> [String] {
        let own = options.filter { $0.shown != .common }
        guard own.count <= 6 else { return ["[options]"] }
        var words: [String] = []
        for option in own {
            switch option.shown {
            case .alternative where words.last?.hasSuffix("]") == true:
                words[words.count - 1].removeLast()
                words[words.count - 1] += " | \(option.synopsis)]"
            case .required:
                words.append(option.synopsis)
            default:
                words.append("[\(option.synopsis)]" + (option.repeats ? "…" : ""))
            }
        }
        return words + (own.count < options.count ? ["[options]"] : [])
    }

    /// `-h, --help`: every command has it.
    package static let help = Option(["-h", "--help"], help: "Show this help.")

    /// The help's lines for `options`: names and value in a column of 30, then the text (with
    /// its environment variable and default), wrapped at 92 columns.
    package static func listing(_ options: [Option]) -> String {
        options.map { option in
            let head = "  " + option.names.joined(separator: ", ") + (option.value.map { " " + $0 } ?? "")
            var text = option.help
            // A flag's variable is set to 1 (or true, yes).
            let variable = option.environment.map { option.value == nil ? $0 + "=1" : $0 }
            let notes = [variable, option.defaultValue.map { "default \($0)" }].compactMap { $0 }
            if !notes.isEmpty {
                let period = text.hasSuffix(".")
                if period { text.removeLast() }
                text += " (" + notes.joined(separator: ", ") + ")" + (period ? "." : "")
            }
            let column = 32
            var lines: [String] = []
            var line = head.count < column ? head + String(repeating: " ", count: column - head.count) : head
            if head.count >= column {
                lines.append(line)
                line = String(repeating: " ", count: column)
            }
            var empty = true
            for word in text.split(separator: " ") {
                if !empty && line.count + 1 + word.count > 92 {
                    lines.append(line)
                    line = String(repeating: " ", count: column)
                    empty = true
                }
                line += (empty ? "" : " ") + word
                empty = false
            }
            lines.append(line)
            return lines.joined(separator: "\n")
        }.joined(separator: "\n")
    }
}

/// A command's arguments read against its declared options: `--name value`, `--name=value`,
/// `-X value`, flags (repeating one is harmless), positional arguments, and `--` after which
/// everything is positional. An option not given falls back to its `JOTTER_*` variable.
package struct Arguments {
    package let environment: [String: String]
    private var given: [String: [String]] = [:]
    private var words: [String] = []
    private let declared: [Option]

    /// Reads `arguments` against `options` (`--help` is always accepted).
    /// - Throws: `UsageError` for an unknown option or one missing its value.
    package init(_ arguments: [String], options: [Option], environment: [String: String]) throws(UsageError) {
        self.environment = environment
        declared = options + [.help]
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "--" {
                words += arguments[index...]
                break
            }
            guard argument.hasPrefix("-"), argument != "-" else {
                words.append(argument)
                continue
            }
            var name = argument, inline: String?
            if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                inline = String(argument[argument.index(after: equals)...])
            }
            guard let option = declared.first(where: { $0.names.contains(name) }) else {
                throw UsageError("unknown option '\(name)'")
            }
            if option.value == nil {
                if inline != nil { throw UsageError("\(name) takes no value") }
                given[option.key] = [""]
                continue
            }
            let value: String
            if let inline {
                value = inline
            } else {
                guard index < arguments.count else { throw UsageError("\(name) needs a value") }
                value = arguments[index]
                index += 1
            }
            given[option.key] = (option.repeats ? given[option.key] ?? [] : []) + [value]
        }
    }

    /// True when `-h` or `--help` comes before any `--`.
    package static func wantsHelp(_ arguments: [String]) -> Bool {
        arguments.prefix { $0 != "--" }.contains { $0 == "--help" || $0 == "-h" }
    }

    /// The value of `option`, read, converted and checked by its declaration: `arguments[Self.limit]`.
    /// - Throws: `UsageError` naming the option (and the variable it came from) for a bad value.
    package subscript<Value>(option: TypedOption<Value>) -> Value {
        get throws(UsageError) {
            precondition(declares(option.option), "\(option.option.key) is not a declared option")
            return try option.read(self)
        }
    }

    /// Whether the command declared `option` (shared option sets ask before reading one).
    package func declares(_ option: Option) -> Bool {
        declared.contains { $0.key == option.key }
    }

    /// The last value given for `option`, else its environment variable (when not empty), else `nil`.
    func text(_ option: Option) -> String? {
        if let value = given[option.key]?.last { return value }
        if let key = option.environment, let value = environment[key], !value.isEmpty { return value }
        return nil
    }

    /// Every value given for a repeatable `option`, in order (`-d a=1 --data b=2 --data=c=3` →
    /// `["a=1", "b=2", "c=3"]`); when none is, its variable's words separated by spaces.
    func values(_ option: Option) -> [String] {
        if let values = given[option.key] { return values }
        return (option.environment.flatMap { environment[$0] } ?? "").split(separator: " ").map(String.init)
    }

    /// Whether flag `option` was given (or its environment variable is `1`/`true`/`yes`).
    func flag(_ option: Option) -> Bool {
        if given[option.key] != nil { return true }
        if let key = option.environment, let value = environment[key]?.lowercased() { return ["1", "true", "yes"].contains(value) }
        return false
    }

    /// The usage error for a value of `option` that is not `expected`: `--limit must be a whole
    /// number from 1 to 1000, not 'ten'`, and `(from JOTTER_X)` when the value came from there.
    package func invalid(_ option: Option, _ text: String, expected: String) -> UsageError {
        // A repeatable option's variable holds its values separated by spaces.
        let variable = option.environment.flatMap { key -> String? in
            guard given[option.key] == nil, let value = environment[key] else { return nil }
            let from = option.repeats ? value.split(separator: " ").contains { $0 == text } : value == text
            return from ? key : nil
        }
        return UsageError("\(option.key) must be \(expected), not '\(text)'\(variable.map { " (from \($0))" } ?? "")")
    }

    /// The positional arguments, in order.
    package func positionals() -> [String] { words }

    /// Fails when there is any positional argument.
    package func finish() throws(UsageError) {
        if let first = words.first { throw UsageError("unexpected argument '\(first)'") }
    }

}

/// Parses sizes such as `1048576`, `512K`, `1MiB`, `1GB` (binary multiples).
package func parseSize(_ text: String) -> Int? {
    let lower = String(text.lowercased().trimmingASCIISpaces())
    let units: [(String, Int)] = [
        ("gib", 1 << 30), ("gb", 1 << 30), ("g", 1 << 30), ("mib", 1 << 20), ("mb", 1 << 20), ("m", 1 << 20),
        ("kib", 1 << 10), ("kb", 1 << 10), ("k", 1 << 10), ("b", 1),
    ]
    for (suffix, factor) in units where lower.hasSuffix(suffix) {
        guard let number = Int(lower.dropLast(suffix.count).trimmingASCIISpaces()), number >= 0 else { return nil }
        let (value, overflow) = number.multipliedReportingOverflow(by: factor)
        return overflow ? nil : value
    }
    return Int(lower).flatMap { $0 >= 0 ? $0 : nil }
}
