// SPDX-License-Identifier: GPL-2.0
/* What the fake guest runs for --kunit-coverage (built with gcc --coverage): the more cases a boot ran, the more of
 * its lines it covers. */
#include <stdlib.h>

/* Named as kernel helpers often are: gcovr takes a leading "__" for a compiler's own function unless told otherwise. */
static int __covered(int cases)
{
	int lines = 0;

	if (cases > 0)
		lines++;
	if (cases > 1)
		lines++;
	if (cases > 3)
		lines++;
	if (cases > 5)
		lines++;
	return lines;
}

int main(int argc, char **argv)
{
	return __covered(argc > 1 ? atoi(argv[1]) : 0) < 0;
}
