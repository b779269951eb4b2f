/* SPDX-License-Identifier: MIT */
/* staticprog.c: linked statically (launcher.sh): no dynamic loader, so no
 * LD_PRELOAD and no recorder. Exits with status 3. */
int main(void)
{
	return 3;
}
