import Synchronization

/// Arguments a command (or a group of options it shares with others) declares once, as its
/// properties: `@Value` for an option, `@Operand` for its positional arguments, `@Group` for a
/// set of options read as one value (`ClientOptions`). The parser finds them with `Mirror`, in
/// the order they are declared:
///
/// ```swift
/// struct NotesHistoryCommand: AsyncCommand, ParsableArguments {
///     @Group var options: ClientOptions
///     @Value(Option.integer("--version", help: "Print this version's body.")) var version: Int?
///     @Value(Option.flag("--trash", help: "The note is in the trash.")) var inTrash: Bool
///     @Operand(.single("ID")) var id: String
/// }
/// ```
///
/// - `init(parsing:)` makes `Self()`, then reads each declared property in declaration order
///   (a group's own properties where the group stands), then calls `validate(_:)`; with no
///   `@Operand`, a positional argument is then the usage error `unexpected argument`.
/// - `options` lists the command's own options in declaration order, then its groups': the
///   options every client command takes come last in its help.
/// - `operandsUsage` and `firstOperand` come from its `@Operand`.
package protocol ParsableArguments: Sendable {
    /// Every declared property unread: what the parser fills, and what `options` is read from.
    init()
    /// Reads `arguments` into the declared properties; by default as said above.
    init(parsing arguments: Arguments) throws
    /// What is checked or made once every declared property is read: a rule between options,
    /// a value made of several. Nothing by default.
    mutating func validate(_ arguments: Arguments) throws
    /// Its options less those named in `excluded` (their keys, `--json`): as declared, by default.
    static func options(without excluded: Set<String>) -> [Option]
    /// Reads it as a group of a command's options, those named in `excluded` left out (read as
    /// not given): its declared properties, then `validate(_:)`, by default.
    init(group arguments: Arguments, without excluded: Set<String>) throws
}

extension ParsableArguments {
    package init(parsing arguments: Arguments) throws {
        self.init()
        try Declared.fill(self, from: arguments, excluding: [])
        try validate(arguments)
        if Declared.operands(of: self) == nil { try arguments.finish() }
    }

    package mutating func validate(_ arguments: Arguments) throws {}

    package static func options(without excluded: Set<String>) -> [Option] { Declared.options(of: Self(), excluding: excluded) }

    package init(group arguments: Arguments, without excluded: Set<String>) throws {
        self.init()
        try Declared.fill(self, from: arguments, excluding: excluded)
        try validate(arguments)
    }
}

extension Command where Self: ParsableArguments {
    package static var options: [Option] { options(without: []) }
    package static var operandsUsage: String { Declared.operands(of: Self())?.usage ?? "" }
    package static var firstOperand: String? { Declared.operands(of: Self())?.first }
}

/// A property the parser fills from the arguments.
private protocol DeclaredProperty {
    /// Its options, for the parser, the help, the man page and the completions.
    func options(excluding: Set<String>) -> [Option]
    var isGroup: Bool { get }
    /// How the usage line shows its operands, for an `@Operand`.
    var operands: (usage: String, first: String?)? { get }
    func fill(from arguments: Arguments, excluding: Set<String>) throws
}

/// The walk over a value's declared properties.
private enum Declared {
    static func properties(of value: Any) -> [any DeclaredProperty] {
        Mirror(reflecting: value).children.compactMap { $0.value as? any DeclaredProperty }
    }

    static func fill(_ value: Any, from arguments: Arguments, excluding: Set<String>) throws {
        for property in properties(of: value) { try property.fill(from: arguments, excluding: excluding) }
    }

    static func options(of value: Any, excluding: Set<String>) -> [Option] {
        let properties = properties(of: value)
        return (properties.filter { !$0.isGroup } + properties.filter(\.isGroup)).flatMap { $0.options(excluding: excluding) }
    }

    static func operands(of value: Any) -> (usage: String, first: String?)? {
        properties(of: value).lazy.compactMap(\.operands).first
    }

    /// What `arguments` would give an option left out of the command: its value when not given.
    static let nothing = try! Arguments([], options: [], environment: [:])
}

/// Where the parser puts a declared property's value: filled once, when the arguments are read.
private final class Slot<Value: Sendable>: Sendable {
    private let stored = Mutex<Value?>(nil)

    func fill(_ value: Value) { stored.withLock { $0 = value } }

    var value: Value {
        guard let value = stored.withLock({ $0 }) else { preconditionFailure("a declared argument is read before the arguments are parsed") }
        return value
    }
}

/// An option of a command, declared with its type (`Option.integer(…)`, `.flag`, `.text`, …):
/// `@Value(Option.flag("--force", help: "…")) var force: Bool`.
@propertyWrapper
package struct Value<Wrapped: Sendable>: Sendable, DeclaredProperty {
    private let declared: [Option]
    private let read: @Sendable (Arguments) throws -> Wrapped
    private let slot = Slot<Wrapped>()

    package init(_ option: TypedOption<Wrapped>) {
        declared = [option.option]
        read = option.read
    }

    /// Two options read as one value, `combine`d as soon as both are read: `--limit N | --all`.
    package init<First, Second>(
        _ first: TypedOption<First>, _ second: TypedOption<Second>,
        _ combine: @escaping @Sendable (First, Second) throws -> Wrapped
    ) {
        declared = [first.option, second.option]
        read = { arguments in try combine(first.read(arguments), second.read(arguments)) }
    }

    package var wrappedValue: Wrapped { slot.value }

    fileprivate func options(excluding: Set<String>) -> [Option] { declared.filter { !excluding.contains($0.key) } }
    fileprivate var isGroup: Bool { false }
    fileprivate var operands: (usage: String, first: String?)? { nil }

    fileprivate func fill(from arguments: Arguments, excluding: Set<String>) throws {
        // An option the command leaves out reads as one not given.
        slot.fill(try read(declared.contains { excluding.contains($0.key) } ? Declared.nothing : arguments))
    }
}

/// A command's positional arguments: `@Operand(.single("ID")) var id: String`.
@propertyWrapper
package struct Operand<Wrapped: Sendable>: Sendable, DeclaredProperty {
    private let declared: Operands<Wrapped>
    private let slot = Slot<Wrapped>()

    package init(_ operands: Operands<Wrapped>) { declared = operands }

    package var wrappedValue: Wrapped { slot.value }

    fileprivate func options(excluding: Set<String>) -> [Option] { [] }
    fileprivate var isGroup: Bool { false }
    fileprivate var operands: (usage: String, first: String?)? { (declared.usage, declared.first) }

    fileprivate func fill(from arguments: Arguments, excluding: Set<String>) throws {
        slot.fill(try arguments[declared])
    }
}

/// Options several commands share, read as one value (`@Group var options: ClientOptions`):
/// its declared properties where the group stands, then its `validate(_:)`. `without` leaves
/// some of its options out of this command (`--json` where nothing is printed as JSON): they
/// read as not given.
@propertyWrapper
package struct Group<Wrapped: ParsableArguments>: Sendable, DeclaredProperty {
    private let excluded: Set<String>
    private let slot = Slot<Wrapped>()

    package init() { excluded = [] }

    package init<Left>(without option: TypedOption<Left>) { excluded = [option.option.key] }

    package var wrappedValue: Wrapped { slot.value }

    fileprivate func options(excluding: Set<String>) -> [Option] { Wrapped.options(without: excluding.union(excluded)) }
    fileprivate var isGroup: Bool { true }
    fileprivate var operands: (usage: String, first: String?)? { nil }

    fileprivate func fill(from arguments: Arguments, excluding: Set<String>) throws {
        slot.fill(try Wrapped(group: arguments, without: excluding.union(excluded)))
    }
}
