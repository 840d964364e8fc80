#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import JotterAPI
import JotterCLICore
import JotterClient
import JotterServer
import JotterStore

/// `jotter users …`: the server's users, managed on the data folder (no server needed; a
/// running server sees the change within its credential refresh interval, 10 s), or through
/// a running server with an administrator's token (`--server`).
struct UsersCommand: CommandGroup {
    static let name = "users"
    static let summary = "Add, list, change the password of and remove users (--data, or --server as an admin)."
    static let subcommands: [any Command.Type] = [UsersAddCommand.self, UsersListCommand.self, UsersPasswdCommand.self, UsersRemoveCommand.self]
    static let about = DataFolder.groupAbout
}

/// `jotter tokens …`: API tokens, on the data folder.
struct TokensCommand: CommandGroup {
    static let name = "tokens"
    static let summary = "Create, list and revoke API tokens (--data, or --server for the signed-in user)."
    static let subcommands: [any Command.Type] = [TokensCreateCommand.self, TokensListCommand.self, TokensRevokeCommand.self]
    static let about = DataFolder.groupAbout
}

/// Where an account command acts: on the server's store — the data folder, or its PostgreSQL
/// database (`--database`) — or through a server (`--server`, or `JOTTER_SERVER` when neither
/// `--data` nor `--database` is given) with a token: `@Group var place: AccountPlace` in the
/// lists, which print JSON too (`--json`, as the API lists them), and `@Group(without:
/// ClientOptions.jsonOption)` in the others, which print text only. The client options are read
/// only when it goes through a server.
struct AccountPlace: ParsableArguments {
    enum Kind {
        case folder(StorePlace)
        case server(ClientOptions)
    }

    private(set) var kind = Kind.folder(StorePlace(data: DataFolder.defaultData))
    private(set) var json = false

    init() {}

    static func options(without excluded: Set<String>) -> [Option] {
        ([DataFolder.data.option, DataFolder.database.option, ClientOptions.serverOption.alternative().option]
            + ClientOptions.connection.filter { $0.key != ClientOptions.serverOption.option.key } + [ClientOptions.jsonOption.option])
            .filter { !excluded.contains($0.key) }
    }

    init(group arguments: Arguments, without excluded: Set<String>) throws {
        let data = try arguments[DataFolder.data], database = try arguments[DataFolder.database]
        if data == nil, database == nil, try arguments[ClientOptions.serverOption] != nil {
            kind = .server(try ClientOptions(group: arguments, without: [ClientOptions.jsonOption.option.key]))
        } else {
            kind = .folder(StorePlace(data: data ?? DataFolder.defaultData, database: database))
        }
        json = try arguments.declares(ClientOptions.jsonOption.option) && arguments[ClientOptions.jsonOption]
    }

    /// Checks the owner a `tokens` command names: `--user NAME` is required on the store (through a
    /// server, the tokens are the signed-in user's).
    func requireOwner(_ user: String?) throws(UsageError) {
        switch kind {
        case .folder: if user == nil { throw UsageError("--user NAME is required on the data folder") }
        case .server:
            // Not ignored: through the server it is always the signed-in user's.
            if user != nil {
                throw UsageError("--user works on the data folder (--data or --database); through the server it is the signed-in user's")
            }
        }
    }

    /// Does what an account command does where it acts: `remote` with the server's client, or
    /// `local` on the store, closed after.
    /// `creating`: a data folder with no database yet gets one (only `users add` does: the
    /// first administrator may come before the first `jotter serve`); otherwise it is an error.
    func perform<T>(
        _ remote: (JotterClient) async throws(JotterClientError) -> T,
        onStore local: (any DataStore) throws -> T, creating: Bool = false
    ) async throws -> T {
        switch kind {
        case .server(let options): try await Self.remote(options, remote)
        case .folder(let data): try DataFolder.with(data, creating: creating, local)
        }
    }

    /// Runs `body` with the server's client, saying an SDK error as the client commands do.
    static func remote<T>(_ options: ClientOptions, _ body: (JotterClient) async throws(JotterClientError) -> T) async throws -> T {
        do { return try await body(options.client()) } catch { throw CommandFailure(error) }
    }
}

/// The store an account command opens: the data folder's SQLite, or PostgreSQL.
struct StorePlace {
    var data: String
    /// A `postgres://` URL; nil for the data folder's database.
    var database: String?
}

/// What the account commands share: the server's store, opened without touching a running
/// server's files in flight.
enum DataFolder {
    static let defaultData = "./jotter-data"
    /// `nil` when neither `--data` nor `JOTTER_DATA` is given (`defaultData` then, unless `--server`).
    static let data = Option.text(
        "--data", value: "DIR", environment: "JOTTER_DATA", default: defaultData,
        help: "Data folder of the server (it may be running); wins over --server.")
    static let database = Option.text(
        "--database", value: "URL", environment: "JOTTER_DATABASE_URL",
        help: "The server's PostgreSQL (postgres://…) instead of the data folder's database; wins over --server."
    ).alternative()

    /// What the `users` and `tokens` help says after their subcommands.
    static let groupAbout = """
        Each works on the server's store — the data folder (--data DIR, JOTTER_DATA) or its PostgreSQL
        (--database URL, JOTTER_DATABASE_URL) — or with --server URL (JOTTER_SERVER) and a token through the
        running server; see <subcommand> --help.
        """

    private static func store(_ place: StorePlace, creating: Bool) throws -> any DataStore {
        var configuration = StoreConfiguration(dataDirectory: place.data)
        do { configuration.database = try .parse(place.database ?? "sqlite", poolSize: 2) } catch { throw UsageError(error.message) }
        if case .sqlite(var options) = configuration.database {
            // A mistyped --data would otherwise become a new, empty store.
            guard creating || FileManager.default.fileExists(atPath: place.data + "/" + SQLiteStore.fileName) else {
                throw CommandFailure(
                    "\(place.data) holds no jotter data (no \(SQLiteStore.fileName)): give the server's data folder with --data DIR",
                    status: ExitCode.notFound)
            }
            options.removesOrphans = false  // a running server's uploads in flight are in tmp/
            configuration.database = .sqlite(options)
        }
        if case .postgres(let url, _) = configuration.database, !creating {
            // Opening migrates: a mistyped database that exists would get Jotter's tables.
            try requireJotterData(url, described: configuration.databaseDescription, else: "give the server's database with --database URL")
        }
        do { return try openDataStore(configuration) } catch {
            throw CommandFailure("cannot open the database \(configuration.databaseDescription): \(error)")
        }
    }

    /// Checks that the PostgreSQL database at `url` holds Jotter's data, without changing
    /// anything; the failure (not found) says `hint`.
    static func requireJotterData(_ url: String, described description: String, else hint: String) throws {
        let holds: Bool
        do { holds = try PostgresStore.holdsJotterData(url: url) } catch {
            throw CommandFailure("cannot open the database \(description): \(error)")
        }
        guard holds else {
            throw CommandFailure("\(description) holds no jotter data (no schema_version table): \(hint)", status: ExitCode.notFound)
        }
    }

    /// Runs `body` on the store of `place`, closing it after; a data folder with no database is
    /// an error unless `creating`.
    static func with<T>(_ place: StorePlace, creating: Bool = false, _ body: (any DataStore) throws -> T) throws -> T {
        let store = try self.store(place, creating: creating)
        defer { store.close() }
        return try body(store)
    }

    static func user(_ name: String, in store: any DataStore) throws -> UserRecord {
        guard let user = try store.user(named: name) else { throw CommandFailure("no user is named \(name)", status: ExitCode.notFound) }
        return user
    }

    /// A new password: twice from the terminal (not echoed), or the first line of standard input.
    static func password(for name: String, console: Console) throws -> String {
        let password: String
        if isatty(0) == 1 {
            let first = String(cString: getpass("New password for \(name): "))
            let second = String(cString: getpass("Again: "))
            guard first == second else { throw CommandFailure("the two passwords differ; nothing changed") }
            password = first
        } else {
            password = console.readFirstLine()
        }
        guard password.count >= 8 else { throw CommandFailure("a password needs at least 8 characters; nothing changed") }
        return password
    }
}

extension Console {
    /// The first line of standard input, without its newline: a password piped in.
    func readFirstLine() -> String {
        String(decoding: readInput(), as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).first.map(String.init) ?? ""
    }
}

struct UsersAddCommand: AsyncCommand, ParsableArguments {
    static let name = "add"
    static let summary = "Add a user."
    static let about = """
        Adds a user. The password is asked twice on a terminal, else read from the first line of
        standard input; it is stored as an Argon2id hash only. The first user ever added takes over
        the notes and uploads stored before there were users. With --server, an administrator's
        token is needed (jotter login, --token or JOTTER_TOKEN).
        """
    @Operand(.single("NAME")) var name: String
    @Value(Option.flag("--admin", help: "The user may manage users.")) var admin: Bool
    @Group(without: ClientOptions.jsonOption) var place: AccountPlace

    func validate(_ arguments: Arguments) throws {
        guard UserName.isValid(name) else { throw UsageError("a user name \(UserName.rule)") }
    }

    func run(console: Console) async throws -> Int32 {
        let password = try DataFolder.password(for: name, console: console)
        console.out(
            try await place.perform(
                { client throws(JotterClientError) in
                    let user = try await client.addUser(name: name, password: password, admin: admin)
                    return "Added user \(user.name)\(user.admin ? " (admin)" : "").\n"
                },
                onStore: { store in
                    let first = try store.users().isEmpty
                    guard
                        case .user(let user) = try store.perform(.addUser(name: name, passwordHash: try PasswordHash.make(password), isAdmin: admin))
                    else {
                        throw CommandFailure("a user named \(name) exists already")
                    }
                    return "Added user \(user.name)\(admin ? " (admin)" : "")\(first ? "; the notes and uploads stored so far are theirs" : "").\n"
                }, creating: true))
        return ExitCode.success
    }
}

struct UsersListCommand: AsyncCommand, ParsableArguments {
    static let name = "list"
    static let summary = "List the users."
    static let about = "Lists the users: name, whether an administrator, when added (UTC); --json as GET /users gives them."
    @Group var place: AccountPlace

    func run(console: Console) async throws -> Int32 {
        let users = try await place.perform(
            { client throws(JotterClientError) in try await client.users() },
            onStore: { store in try store.users().map(UserInfo.init) })
        if place.json {
            console.out(try ClientOptions.json(UserList(users: users)))
        } else {
            console.out(
                TextFormat.table(["NAME", "ADMIN", "CREATED"], users.map { [$0.name, $0.admin ? "yes" : "no", TextFormat.time($0.createdAt)] }))
        }
        return ExitCode.success
    }
}

struct UsersPasswdCommand: AsyncCommand, ParsableArguments {
    static let name = "passwd"
    static let summary = "Change a user's password."
    static let about = "Sets a new password (asked as for users add); the user's web sessions end, their API tokens stay."
    @Operand(.single("NAME")) var name: String
    @Group(without: ClientOptions.jsonOption) var place: AccountPlace

    func run(console: Console) async throws -> Int32 {
        switch place.kind {
        case .server(let options):
            let password = try DataFolder.password(for: name, console: console)
            try await AccountPlace.remote(options) { client throws(JotterClientError) in try await client.setPassword(user: name, password: password)
            }
        case .folder(let data):
            _ = try DataFolder.with(data) { store in
                let user = try DataFolder.user(name, in: store)
                let password = try DataFolder.password(for: name, console: console)
                return try store.perform(.setPassword(userID: user.id, passwordHash: try PasswordHash.make(password)))
            }
        }
        console.out("Changed the password of \(name).\n")
        return ExitCode.success
    }
}

struct UsersRemoveCommand: AsyncCommand, ParsableArguments {
    static let name = "remove"
    static let summary = "Remove a user with their notes and uploads."
    static let about = """
        Removes the user, their notes, uploads (the files too), tokens and sessions. Asks first on
        a terminal; elsewhere --yes is needed. The last administrator is not removed: add another
        administrator first.
        """
    @Operand(.single("NAME")) var name: String
    @Value(Option.flag("--yes", help: "Do not ask.")) var yes: Bool
    @Group(without: ClientOptions.jsonOption) var place: AccountPlace

    func run(console: Console) async throws -> Int32 {
        guard try confirmed(console) else { return ExitCode.failure }
        switch place.kind {
        case .server(let options): try await Self.remove(name, through: options)
        case .folder(let data): try Self.remove(name, in: data)
        }
        console.out("Removed \(name) with their notes and uploads.\n")
        return ExitCode.success
    }

    /// Whether to go on: `--yes`, or "y" at the prompt on a terminal.
    private func confirmed(_ console: Console) throws -> Bool {
        if yes { return true }
        guard isatty(0) == 1 else { throw UsageError("removing \(name) deletes their notes and uploads: add --yes to confirm") }
        console.err("Remove \(name) with all their notes and uploads? [y/N] ")
        guard let answer = readLine(), ["y", "yes"].contains(answer.lowercased()) else {
            console.err("Nothing removed.\n")
            return false
        }
        return true
    }

    // The prompt and both branches are functions of their own: inline in `run`, Swift 6.3.1's
    // optimizer crashes (signal 11 splitting the coroutine of `run`) in release builds.
    @inline(never) private static func remove(_ name: String, through options: ClientOptions) async throws {
        try await AccountPlace.remote(options) { client throws(JotterClientError) in try await client.removeUser(name) }
    }

    @inline(never) private static func remove(_ name: String, in data: StorePlace) throws {
        try DataFolder.with(data) { store in
            let user = try DataFolder.user(name, in: store)
            if try store.perform(.removeUser(userID: user.id)) == .lastAdministrator {
                throw CommandFailure(AccountWriteResult.lastAdministratorDetail(user.name), status: ExitCode.conflict)
            }
        }
    }
}

struct TokensCreateCommand: AsyncCommand, ParsableArguments {
    static let name = "create"
    static let summary = "Create an API token."
    static let about = """
        Prints a new API token once (jot_…); only its SHA-256 is stored. On the data folder it is
        --user's; with --server, the signed-in user's. Give it to the CLI as JOTTER_TOKEN or to
        `Authorization: Bearer`.
        """
    @Value(Option.text("--user", value: "NAME", help: "Whose token it is (with --data or --database; required there, refused through the server)."))
    var user: String?
    @Value(Option.text("--name", value: "LABEL", help: "What it is for, shown by tokens list.").map { $0 ?? "" }) var label: String
    @Value(
        Option.value(
            "--expires", value: "DURATION", expected: "a duration from 1m to 10y such as 12h, 30d or 1y",
            help: "Lifetime such as 12h, 30d or 1y (1m to 10y); no expiry when absent.", TokensCreateCommand.duration))
    var expires: Int64?
    @Group(without: ClientOptions.jsonOption) var place: AccountPlace

    func validate(_ arguments: Arguments) throws { try place.requireOwner(user) }

    /// `90m`, `12h`, `30d`, `1y` (or plain seconds) as seconds, within the lifetimes the server
    /// takes (`AuthController.lifetimes`: a minute to ten years), on the data folder as through it.
    @Sendable static func duration(_ text: String) -> Int64? {
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400]
        guard let last = text.last else { return nil }
        let (number, unit) = last.isNumber ? (text, Int64(1)) : (String(text.dropLast()), units[last] ?? 0)
        guard unit > 0, let value = Int64(number), value > 0, value <= AuthController.lifetimes.upperBound / unit,
            AuthController.lifetimes.contains(value * unit)
        else { return nil }
        return value * unit
    }

    func run(console: Console) async throws -> Int32 {
        let token = try await place.perform(
            { client throws(JotterClientError) in
                try await client.createToken(label: label, expiresIn: expires.map { Int($0) }).token
            },
            onStore: { store in
                let owner = try DataFolder.user(user ?? "", in: store)
                let secret = Secret.make(prefix: Secret.tokenPrefix)
                let expiresAt = expires.map { Int64(time(nil)) + $0 }
                _ = try store.perform(.issue(userID: owner.id, kind: .token, label: label, digest: Secret.digest(secret), expiresAt: expiresAt))
                return secret
            })
        console.out(token + "\n")
        return ExitCode.success
    }
}

struct TokensListCommand: AsyncCommand, ParsableArguments {
    static let name = "list"
    static let summary = "List API tokens."
    static let about =
        "Lists tokens, newest first: id, label, created, last used, expiry (UTC), revoked — --user's on the data folder, the signed-in user's with --server; --json as GET /auth/tokens gives them."
    @Value(Option.text("--user", value: "NAME", help: "Whose tokens (with --data or --database; required there, refused through the server)."))
    var user: String?
    @Group var place: AccountPlace

    func validate(_ arguments: Arguments) throws { try place.requireOwner(user) }

    func run(console: Console) async throws -> Int32 {
        let tokens = try await place.perform(
            { client throws(JotterClientError) in try await client.tokens() },
            onStore: { store in
                try store.credentials(userID: try DataFolder.user(user ?? "", in: store).id, kind: .token).map(TokenInfo.init)
            })
        if place.json {
            console.out(try ClientOptions.json(TokenList(tokens: tokens)))
            return ExitCode.success
        }
        // One table however long the label or the times (over --server and on the data folder alike).
        let shown = { (text: String) in console.outputIsTerminal ? TextFormat.visible(text) : text }
        console.out(
            TextFormat.table(
                ["ID", "LABEL", "CREATED", "LAST USED", "EXPIRES", "REVOKED"],
                tokens.map { token in
                    [token.id, token.label.isEmpty ? "-" : shown(token.label)]
                        + [token.createdAt, token.lastUsedAt, token.expiresAt, token.revokedAt].map(TextFormat.time)
                }))
        return ExitCode.success
    }
}

struct TokensRevokeCommand: AsyncCommand, ParsableArguments {
    static let name = "revoke"
    static let summary = "Revoke an API token."
    static let about = """
        Revokes the token with this id (from tokens list). Through --server it is refused from the
        next request on; on the data folder a running server refuses it within 10 s.
        """
    @Operand(
        Operands.single("ID").map { text throws(UsageError) in
            guard let id = Int64(text), id > 0 else { throw UsageError("ID is a token's number, from jotter tokens list") }
            return id
        })
    var id: Int64
    @Group(without: ClientOptions.jsonOption) var place: AccountPlace

    func run(console: Console) async throws -> Int32 {
        let label = try await place.perform(
            { client throws(JotterClientError) in try await client.revokeToken(String(id)).label },
            onStore: { store in
                guard case .credential(let token) = try store.perform(.revoke(id: id, userID: nil)), token.kind == .token else {
                    throw CommandFailure("no token has id \(id)", status: ExitCode.notFound)
                }
                return token.label
            })
        console.out("Revoked token \(id)\(label.isEmpty ? "" : " (\(label))").\n")
        return ExitCode.success
    }
}
