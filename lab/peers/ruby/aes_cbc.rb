# aes_cbc.rb times Ruby's OpenSSL AES-256-CBC exactly as the field report
# on local encryption vs a KMS did: a fixed key and IV (weak: deterministic
# and unauthenticated; reproduced, not recommended), a text of about 500
# characters, 1,000 encryptions and 1,000 decryptions. It prints, as JSON,
# the seconds per 1,000 operations of every round.
# Usage: ruby aes_cbc.rb ROUNDS
require 'openssl'
require 'json'

rounds = Integer(ARGV[0] || 5)
key = 'k' * 32
iv = 'i' * 16
text = '今日の予定を教えてください。明日は歯医者の予約があります。' * 17

def encrypt(text, key, iv)
  c = OpenSSL::Cipher.new('AES-256-CBC')
  c.encrypt
  c.key = key
  c.iv = iv
  c.update(text) + c.final
end

def decrypt(data, key, iv)
  c = OpenSSL::Cipher.new('AES-256-CBC')
  c.decrypt
  c.key = key
  c.iv = iv
  c.update(data) + c.final
end

ct = encrypt(text, key, iv)
100.times { decrypt(encrypt(text, key, iv), key, iv) } # warm-up
enc, dec = [], []
rounds.times do
  t = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  1000.times { encrypt(text, key, iv) }
  enc << Process.clock_gettime(Process::CLOCK_MONOTONIC) - t
  t = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  1000.times { decrypt(ct, key, iv) }
  dec << Process.clock_gettime(Process::CLOCK_MONOTONIC) - t
end
puts JSON.generate({ text_chars: text.length, text_bytes: text.bytesize, encrypt_s: enc, decrypt_s: dec })
