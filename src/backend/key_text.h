/*
 * key_text.h — an encoded key as people read it (key_text.c).
 */
#ifndef ZK_LOCK_KEY_TEXT_H
#define ZK_LOCK_KEY_TEXT_H

extern char *zb_display_key(const char *encoded);

#endif
