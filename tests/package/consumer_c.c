/* Uses only the installed <zex/abi.h>, from C. */
#include <zex/abi.h>

#include <stdio.h>

int main(void) {
  zex_report_t report = {0};
  report.status = ZEX_STATUS_THROWN;
  if (sizeof report != 528 || offsetof(zex_report_t, frames) != 112 || report.status != 1u) {
    fprintf(stderr, "zex/abi.h from C: unexpected layout\n");
    return 1;
  }
  printf("zex/abi.h from C: zex_report_t is %zu bytes, ABI version %u\n", sizeof report,
         (unsigned)ZEX_ABI_VERSION);
  return 0;
}
