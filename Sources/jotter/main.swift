import Glibc
import JotterCLI

exit(JotterCommandLine.run(Array(CommandLine.arguments.dropFirst())))
