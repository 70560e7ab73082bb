// The kvoctl executable: everything is in KVOCtlCommands, which kvod links too, to run as `kvoctl` in the image.
import KVOCtlCommands

KVOCtlEntry.main()
