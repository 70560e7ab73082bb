// The one C header kvod imports: libuv (Debian libuv1-dev, pkg-config "libuv").
#include <uv.h>
