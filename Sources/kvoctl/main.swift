// The kvoctl executable: everything is in KVOCtlCommands.
import KVOCtlCommands

KVOCtlEntry.main()
