/* bcryptprimitives.dll for Wine 8, which lacks it: Rust's standard library asks it for
 * ProcessPrng (Windows 10 and later have the DLL). This one hands the call to advapi32's
 * SystemFunction036 (RtlGenRandom), which Wine has. Only scripts/windows builds it, beside the
 * .exe it runs under Wine; it is never shipped. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
