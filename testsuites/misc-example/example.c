// SPDX-License-Identifier: GPL-2.0
/* The code under test of the KUnit RFC's "Writing your first test", kept outside any kernel tree. */
#include <linux/errno.h>

#include "example.h"

int misc_example_add(int left, int right)
{
	return left + right;
}
