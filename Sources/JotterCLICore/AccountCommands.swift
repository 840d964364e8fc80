#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import JotterStore

/// `jotter users …`: the server's users, managed on the data folder (no server needed; a
/// running server sees the change within its credential refresh interval, 10 s).
package struct UsersCommand: CommandGroup {
    package static let name = "users"
    package static let summary = "Add, list, change the password of and remove users (on --data)."
    package static let usage = "jotter users <subcommand> [options]"
    package static let subcommands: [any Command.Type] = [UsersAddCommand.self, UsersListCommand.self, UsersPasswdCommand.self, UsersRemoveCommand.self]
    package static var help: String { DataFolder.groupHelp(usage, subcommands) }
}

/// `jotter tokens …`: API tokens, on the data folder.
package struct TokensCommand: CommandGroup {
    package static let name = "tokens"
    package static let summary = "Create, list and revoke API tokens (on --data)."
    package static let usage = "jotter tokens <subcommand> [options]"
    package static let subcommands: [any Command.Type] = [TokensCreateCommand.self, TokensListCommand.self, TokensRevokeCommand.self]
    package static var help: String { DataFolder.groupHelp(usage, subcommands) }
}

/// What the account commands share: the data folder, opened without touching a running
/// server's files in flight.
enum DataFolder {
    static let option = Option("--data", value: "DIR", environment: "JOTTER_DATA", default: "./jotter-data",
                               help: "Data folder of the server (it may be running).")

    /// A group's help: usage and its subcommands.
    static func groupHelp(_ usage: String, _ subcommands: [any Command.Type]) -> String {
        let width = subcommands.map { $0.name.count }.max() ?? 0
        let list = subcommands.map { "  " + DataFolder.pad($0.name, width + 2) + $0.summary }.joined(separator: "\n")
        return "USAGE: \(usage)\n\nSUBCOMMANDS:\n\(list)\n\nEach works on the data folder --data DIR (JOTTER_DATA); see <subcommand> --help.\n\n"
    }

    static func open(_ arguments: Arguments) -> String { arguments.option("--data") ?? "./jotter-data" }

    static func store(_ path: String) throws -> SQLiteNoteStore {
        var options = SQLiteNoteStore.Options()
        options.removesOrphans = false
        do { return try SQLiteNoteStore(dataDirectory: path, options: options) } catch {
            throw ServeFailure("cannot open the data folder \(path): \(error)")
        }
    }

    static func user(_ name: String, in store: SQLiteNoteStore) throws -> UserRecord {
        guard let user = try store.user(named: name) else { throw AccountFailure("no user is named \(name)", code: ExitCode.notFound) }
        return user
    }

    /// A new password: twice from the terminal (not echoed), or the first line of standard input.
    static func password(for name: String, console: Console) throws -> String {
        let password: String
        if isatty(0) == 1 {
            let first = String(cString: getpass("New password for \(name): "))
            let second = String(cString: getpass("Again: "))
            guard first == second else { throw AccountFailure("the two passwords differ; nothing changed") }
            password = first
        } else {
            password = String(decoding: console.readInput(), as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
                .first.map(String.init) ?? ""
        }
        guard password.count >= 8 else { throw AccountFailure("a password needs at least 8 characters; nothing changed") }
        return password
    }

    static func date(_ seconds: Int64?) -> String {
        guard let seconds else { return "-" }
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        let two = { (value: Int32) -> String in value < 10 ? "0\(value)" : "\(value)" }
        let day = "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))"
        return day + " " + two(parts.tm_hour) + ":" + two(parts.tm_min)
    }

    /// `text` followed by spaces up to `width` characters.
    static func pad(_ text: String, _ width: Int) -> String {
        text + String(repeating: " ", count: max(0, width - text.count))
    }
}

/// A failure of an account command, with its exit code.
struct AccountFailure: Error, CustomStringConvertible {
    let description: String
    let code: Int32
    init(_ description: String, code: Int32 = ExitCode.failure) {
        self.description = description
        self.code = code
    }
}

extension BlockingCommand {
    /// Runs `body`, saying an `AccountFailure` in one line with its exit code.
    static func reporting(_ console: Console, _ body: () throws -> Int32) throws -> Int32 {
        do { return try body() } catch let failure as AccountFailure {
            console.err("error: \(failure.description)\n")
            return failure.code
        }
    }
}

package struct UsersAddCommand: BlockingCommand {
    package static let name = "add"
    package static let summary = "Add a user."
    package static let usage = "jotter users add NAME [--admin] [--data DIR]"
    package static let about = """
    Adds a user. The password is asked twice on a terminal, else read from the first line of
    standard input; it is stored as an Argon2id hash only. The first user ever added takes over
    the notes and uploads stored before there were users.
    """
    package static let options = [Option("--admin", help: "The user may manage users."), DataFolder.option]
    let name: String, admin: Bool, data: String

    package init(parsing arguments: Arguments) throws {
        name = try arguments.single("NAME")
        admin = arguments.flag("--admin")
        data = DataFolder.open(arguments)
        guard !name.isEmpty, name.count <= 64, name.unicodeScalars.allSatisfy({ $0.properties.isAlphabetic || "0123456789._-@".unicodeScalars.contains($0) }) else {
            throw UsageError("a user name is 1 to 64 letters, digits and . _ - @")
        }
    }

    package func run(console: Console) throws -> Int32 {
        try Self.reporting(console) {
            let password = try DataFolder.password(for: name, console: console)
            let store = try DataFolder.store(data)
            defer { store.close() }
            let first = try store.users().isEmpty
            switch try store.perform(.addUser(name: name, passwordHash: try PasswordHash.make(password), isAdmin: admin)) {
            case .user(let user):
                console.out("Added user \(user.name)\(admin ? " (admin)" : "")\(first ? "; the notes and uploads stored so far are theirs" : "").\n")
                return ExitCode.success
            default:
                throw AccountFailure("a user named \(name) exists already")
            }
        }
    }
}

package struct UsersListCommand: BlockingCommand {
    package static let name = "list"
    package static let summary = "List the users."
    package static let usage = "jotter users list [--data DIR]"
    package static let about = "Lists the users: name, whether an administrator, when added (UTC)."
    package static let options = [DataFolder.option]
    let data: String

    package init(parsing arguments: Arguments) throws {
        data = DataFolder.open(arguments)
        try arguments.finish()
    }

    package func run(console: Console) throws -> Int32 {
        let store = try DataFolder.store(data)
        defer { store.close() }
        var text = "NAME                 ADMIN  CREATED\n"
        for user in try store.users() {
            let admin = user.isAdmin ? "yes    " : "no     "
            text += DataFolder.pad(user.name, 20) + " " + admin + DataFolder.date(user.createdAt) + "\n"
        }
        console.out(text)
        return ExitCode.success
    }
}

package struct UsersPasswdCommand: BlockingCommand {
    package static let name = "passwd"
    package static let summary = "Change a user's password."
    package static let usage = "jotter users passwd NAME [--data DIR]"
    package static let about = "Sets a new password (asked as for users add); the user's web sessions end, their API tokens stay."
    package static let options = [DataFolder.option]
    let name: String, data: String

    package init(parsing arguments: Arguments) throws {
        name = try arguments.single("NAME")
        data = DataFolder.open(arguments)
    }

    package func run(console: Console) throws -> Int32 {
        try Self.reporting(console) {
            let store = try DataFolder.store(data)
            defer { store.close() }
            let user = try DataFolder.user(name, in: store)
            let password = try DataFolder.password(for: name, console: console)
            _ = try store.perform(.setPassword(userID: user.id, passwordHash: try PasswordHash.make(password)))
            console.out("Changed the password of \(user.name).\n")
            return ExitCode.success
        }
    }
}

package struct UsersRemoveCommand: BlockingCommand {
    package static let name = "remove"
    package static let summary = "Remove a user with their notes and uploads."
    package static let usage = "jotter users remove NAME [--yes] [--data DIR]"
    package static let about = """
    Removes the user, their notes, uploads (the files too), tokens and sessions. Asks first on
    a terminal; elsewhere --yes is needed.
    """
    package static let options = [Option("--yes", help: "Do not ask."), DataFolder.option]
    let name: String, yes: Bool, data: String

    package init(parsing arguments: Arguments) throws {
        name = try arguments.single("NAME")
        yes = arguments.flag("--yes")
        data = DataFolder.open(arguments)
    }

    package func run(console: Console) throws -> Int32 {
        try Self.reporting(console) {
            let store = try DataFolder.store(data)
            defer { store.close() }
            let user = try DataFolder.user(name, in: store)
            if !yes {
                guard isatty(0) == 1 else { throw UsageError("removing \(name) deletes their notes and uploads: add --yes to confirm") }
                console.err("Remove \(user.name) with all their notes and uploads? [y/N] ")
                guard let answer = readLine(), ["y", "yes"].contains(answer.lowercased()) else {
                    console.err("Nothing removed.\n")
                    return ExitCode.failure
                }
            }
            _ = try store.perform(.removeUser(userID: user.id))
            console.out("Removed \(user.name) with their notes and uploads.\n")
            return ExitCode.success
        }
    }
}

package struct TokensCreateCommand: BlockingCommand {
    package static let name = "create"
    package static let summary = "Create an API token for a user."
    package static let usage = "jotter tokens create --user NAME [--name LABEL] [--expires 30d] [--data DIR]"
    package static let about = """
    Prints a new API token once (jot_…); only its SHA-256 is stored. Give it to the CLI as
    JOTTER_TOKEN or to `Authorization: Bearer`.
    """
    package static let options = [
        Option("--user", value: "NAME", help: "Whose token it is (required)."),
        Option("--name", value: "LABEL", help: "What it is for, shown by tokens list."),
        Option("--expires", value: "DURATION", help: "Lifetime such as 12h, 30d or 1y; no expiry when absent."),
        DataFolder.option,
    ]
    let user: String, label: String, expires: Int64?, data: String

    package init(parsing arguments: Arguments) throws {
        guard let user = arguments.option("--user") else { throw UsageError("--user NAME is required") }
        self.user = user
        label = arguments.option("--name") ?? ""
        expires = try arguments.option("--expires", as: "a duration such as 12h, 30d or 1y", Self.duration)
        data = DataFolder.open(arguments)
        try arguments.finish()
    }

    /// `90m`, `12h`, `30d`, `1y` (or plain seconds) as seconds.
    static func duration(_ text: String) -> Int64? {
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400]
        guard let last = text.last else { return nil }
        let (number, unit) = last.isNumber ? (text, Int64(1)) : (String(text.dropLast()), units[last] ?? 0)
        guard unit > 0, let value = Int64(number), value > 0, value <= 100 * 365 * 86400 / unit else { return nil }
        return value * unit
    }

    package func run(console: Console) throws -> Int32 {
        try Self.reporting(console) {
            let store = try DataFolder.store(data)
            defer { store.close() }
            let owner = try DataFolder.user(user, in: store)
            let secret = Secret.make(prefix: Secret.tokenPrefix)
            let expiresAt = expires.map { Int64(time(nil)) + $0 }
            _ = try store.perform(.issue(userID: owner.id, kind: .token, label: label, digest: Secret.digest(secret), expiresAt: expiresAt))
            console.out(secret + "\n")
            return ExitCode.success
        }
    }
}

package struct TokensListCommand: BlockingCommand {
    package static let name = "list"
    package static let summary = "List a user's API tokens."
    package static let usage = "jotter tokens list --user NAME [--data DIR]"
    package static let about = "Lists the user's tokens, newest first: id, label, created, last used, expiry (UTC), revoked."
    package static let options = [Option("--user", value: "NAME", help: "Whose tokens (required)."), DataFolder.option]
    let user: String, data: String

    package init(parsing arguments: Arguments) throws {
        guard let user = arguments.option("--user") else { throw UsageError("--user NAME is required") }
        self.user = user
        data = DataFolder.open(arguments)
        try arguments.finish()
    }

    package func run(console: Console) throws -> Int32 {
        try Self.reporting(console) {
            let store = try DataFolder.store(data)
            defer { store.close() }
            let owner = try DataFolder.user(user, in: store)
            var text = "ID     LABEL                CREATED           LAST USED         EXPIRES           REVOKED\n"
            for token in try store.credentials(userID: owner.id, kind: .token) {
                let label = token.label.isEmpty ? "-" : token.label
                let dates: [String] = [token.createdAt, token.lastUsedAt, token.expiresAt, token.revokedAt].map { DataFolder.pad(DataFolder.date($0), 17) }
                let line: String = DataFolder.pad(String(token.id), 6) + " " + DataFolder.pad(label, 20) + " " + dates.joined(separator: " ")
                text += String(line.reversed().drop { $0 == " " }.reversed()) + "\n"
            }
            console.out(text)
            return ExitCode.success
        }
    }
}

package struct TokensRevokeCommand: BlockingCommand {
    package static let name = "revoke"
    package static let summary = "Revoke an API token."
    package static let usage = "jotter tokens revoke ID [--data DIR]"
    package static let about = "Revokes the token with this id (from tokens list); a running server refuses it within 10 s."
    package static let options = [DataFolder.option]
    let id: Int64, data: String

    package init(parsing arguments: Arguments) throws {
        let text = try arguments.single("ID")
        guard let id = Int64(text), id > 0 else { throw UsageError("ID is a token's number, from jotter tokens list") }
        self.id = id
        data = DataFolder.open(arguments)
    }

    package func run(console: Console) throws -> Int32 {
        try Self.reporting(console) {
            let store = try DataFolder.store(data)
            defer { store.close() }
            guard case .credential(let token) = try store.perform(.revoke(id: id, userID: nil)), token.kind == .token else {
                throw AccountFailure("no token has id \(id)", code: ExitCode.notFound)
            }
            console.out("Revoked token \(id)\(token.label.isEmpty ? "" : " (\(token.label))").\n")
            return ExitCode.success
        }
    }
}
