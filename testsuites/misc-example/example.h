/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _MISC_EXAMPLE_H
#define _MISC_EXAMPLE_H

int misc_example_add(int left, int right);

#endif /* _MISC_EXAMPLE_H */
