# placeholder: being written
import sys
open(sys.argv[2], "w").write("// placeholder\n")
